"""A user's own LangGraph graphs: which ones a process knows, and how they are compiled.

A graph is registered by name as an uncompiled ``StateGraph``, a no-argument function
returning one, or an already built graph (a functional-API ``@entrypoint``, a compiled
graph): Waystone compiles it with its own saver, so every checkpoint it writes is fenced
by the run's lease. ``WAYSTONE_GRAPHS="support=mypkg.agent:graph,..."`` names graphs for
the CLI, workers and servers, and so does a ``langgraph.json`` (the file ``langgraph dev``
reads: its ``graphs``, ``"name": "./file.py:attr"`` or ``"package.module:attr"``) in the
current directory, or the one ``WAYSTONE_LANGGRAPH_JSON`` names.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from waystone._identifiers import check_identifier
from waystone._imports import import_file, import_object
from waystone.config import Settings, check_tools, parse_graphs
from waystone.errors import BadInput

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.pregel import Pregel
    from langgraph.store.base import BaseStore

GraphSource = Any  # a StateGraph, a function returning one, or a Pregel (see module doc)


def configured_graphs(settings: Settings) -> dict[str, GraphSource]:
    """The graphs ``WAYSTONE_GRAPHS`` names (``name=module:attribute``, comma-separated),
    and those of the ``langgraph.json`` in use (see the module's doc)."""
    found = import_graphs(settings.graphs)
    config = langgraph_json(settings)
    if config is not None:
        for name, source in load_langgraph_json(config).items():
            if name in found:
                raise BadInput(
                    f"{name!r} is named by WAYSTONE_GRAPHS and by {config}: give it one name"
                )
            found[name] = source
    return found


def langgraph_json(settings: Settings) -> Path | None:
    """The ``langgraph.json`` in use: the one ``WAYSTONE_LANGGRAPH_JSON`` names, or the
    current directory's; ``None`` when there is none."""
    config = settings.langgraph_json or Path("langgraph.json")
    return config if settings.langgraph_json or config.is_file() else None


def configured_auth(settings: Settings) -> Any | None:
    """The object the ``langgraph.json`` in use names as ``"auth": {"path": ...}`` (a
    ``langgraph_sdk.Auth``, as ``langgraph dev`` loads it), or ``None`` when none does."""
    path = langgraph_json(settings)
    if path is None:
        return None
    config = _read(path)
    auth = config.get("auth")
    if auth is None or (isinstance(auth, dict) and auth.get("path") is None):
        return None
    ref = auth.get("path") if isinstance(auth, dict) else None
    if not isinstance(ref, str) or ":" not in ref:
        raise BadInput(
            f'{path}: "auth" needs "path": "./auth.py:auth" (a file or module, ":", a name)'
        )
    return _load(path, ref)


def _read(path: Path) -> dict[str, Any]:
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BadInput(f"{path}: cannot read it as JSON: {exc}") from exc
    return config if isinstance(config, dict) else {}


def _load(path: Path, ref: str) -> Any:
    """What ``ref`` (``./file.py:attr`` or ``package.module:attr``) names, a file read
    from ``path``'s directory (which goes on the import path)."""
    base = path.resolve().parent
    if str(base) not in sys.path:
        sys.path.insert(0, str(base))
    where, _, attr = ref.rpartition(":")
    if where.endswith(".py") or "/" in where:
        graph: GraphSource = import_file(str(path), base / where, attr)
        return graph
    return import_object(str(path), ref)


def load_langgraph_json(path: Path) -> dict[str, GraphSource]:
    """The graphs of a ``langgraph.json``: a file path is read from the file's directory
    (which goes on the import path, as ``langgraph dev`` puts its dependencies there)."""
    graphs = _read(path).get("graphs")
    if not isinstance(graphs, dict):
        raise BadInput(f'{path}: needs "graphs": {{"name": "./file.py:graph", ...}}')
    found: dict[str, GraphSource] = {}
    for name, spec in graphs.items():
        ref = spec.get("path") if isinstance(spec, dict) else spec
        if not isinstance(ref, str) or ":" not in ref:
            raise BadInput(f"{path}: graph {name!r} is not 'path/to/file.py:attribute'")
        found[check_identifier("agent name", name)] = _load(path, ref)
    return found


def load_graphs(text: str) -> dict[str, GraphSource]:
    """The graphs ``text`` names, as ``WAYSTONE_GRAPHS`` does."""
    return import_graphs(parse_graphs(text))


def import_graphs(named: Iterable[tuple[str, str]]) -> dict[str, GraphSource]:
    return {
        check_identifier("agent name", name): import_object("WAYSTONE_GRAPHS", ref)
        for name, ref in named
    }


def compile_graph(
    name: str,
    source: GraphSource,
    saver: BaseCheckpointSaver[Any],
    tools: str = "ledger",
    store: BaseStore | None = None,
) -> Pregel[Any, Any, Any, Any]:
    """``source`` compiled (or copied) with ``saver`` as its checkpointer and ``store`` as
    its store (``get_store()``, ``runtime.store`` in its nodes), unless it was compiled
    with a store of its own; with ``tools`` ``"ledger"``, every call of its ``ToolNode`` s
    (and its subgraphs') goes through the effect ledger (:mod:`waystone.effects._tool_node`)."""
    from langgraph.graph import StateGraph
    from langgraph.pregel import Pregel

    try:
        built = source
        if not isinstance(built, StateGraph | Pregel) and callable(built):
            built = built()
        if isinstance(built, StateGraph):
            built = built.compile(checkpointer=saver, store=store)
        elif isinstance(built, Pregel):
            kept = {} if built.store is not None or store is None else {"store": store}
            built = built.copy(update={"checkpointer": saver, **kept})
    except Exception as exc:  # the user's code: whatever it raises, the graph is unusable
        raise BadInput(f"graph {name!r} cannot be built: {type(exc).__name__}: {exc}") from exc
    if not isinstance(built, Pregel):
        raise BadInput(
            f"graph {name!r} is a {type(source).__name__}: register a StateGraph, a "
            "function returning one, a compiled graph or a functional-API @entrypoint"
        )
    if built.interrupt_before_nodes or built.interrupt_after_nodes:
        # a static breakpoint stops the graph with nothing pending to answer: no run could
        # tell it from the graph's end
        raise BadInput(
            f"graph {name!r} is compiled with interrupt_before/interrupt_after: call "
            "interrupt() in the node instead (the run waits on it, and resume answers it)"
        )
    if check_tools(tools) == "ledger":
        from waystone.effects._tool_node import route_tool_nodes

        built = route_tool_nodes(built, name)
    return built


def needs_async(graph: Pregel[Any, Any, Any, Any]) -> bool:
    """Whether a compiled graph has a node (in it or in a subgraph) that is only async
    (``async def``), or a ``ToolNode`` with a tool that is (an MCP server's, as
    ``langchain-mcp-adapters`` makes them): ``invoke`` refuses those, only ``ainvoke``
    runs them."""
    from langgraph._internal._runnable import RunnableCallable
    from langgraph.prebuilt import ToolNode
    from langgraph.pregel import Pregel

    for node in graph.nodes.values():
        bound = node.bound
        if isinstance(bound, RunnableCallable) and bound.func is None and bound.afunc:
            return True
        if isinstance(bound, ToolNode) and any(map(_async_only, bound.tools_by_name.values())):
            return True
        if isinstance(bound, Pregel) and needs_async(bound):
            return True
    return False


def _async_only(tool: Any) -> bool:
    """A structured tool made with a coroutine alone (or a durable tool wrapping one)."""
    from langchain_core.tools import StructuredTool

    from waystone.effects.lc_tools import DurableTool

    if isinstance(tool, DurableTool):
        return _async_only(tool.inner)
    return isinstance(tool, StructuredTool) and tool.func is None and tool.coroutine is not None


def check_names(agents: Mapping[str, object], graphs: Mapping[str, object]) -> None:
    """A name runs one thing: an agent or a graph, never both."""
    both = sorted(set(agents) & set(graphs))
    if both:
        raise BadInput(f"{', '.join(both)}: registered both as an agent and as a graph; rename one")
