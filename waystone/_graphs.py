"""A user's own LangGraph graphs: which ones a process knows, and how they are compiled.

A graph is registered by name as an uncompiled ``StateGraph``, a no-argument function
returning one, or an already built graph (a functional-API ``@entrypoint``, a compiled
graph): Waystone compiles it with its own saver, so every checkpoint it writes is fenced
by the run's lease. ``WAYSTONE_GRAPHS="support=mypkg.agent:graph,..."`` names graphs for
the CLI, workers and servers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from waystone._identifiers import check_identifier
from waystone._imports import import_object
from waystone.errors import BadInput

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.pregel import Pregel

GraphSource = Any  # a StateGraph, a function returning one, or a Pregel (see module doc)


def graphs_from_env() -> dict[str, GraphSource]:
    """The graphs ``WAYSTONE_GRAPHS`` names (``name=module:attribute``, comma-separated)."""
    return load_graphs(os.environ.get("WAYSTONE_GRAPHS", ""))


def load_graphs(text: str) -> dict[str, GraphSource]:
    found: dict[str, GraphSource] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, ref = part.partition("=")
        if not sep or not name.strip() or not ref.strip():
            raise BadInput(
                f"WAYSTONE_GRAPHS: {part!r} is not name=module:attribute "
                '(e.g. WAYSTONE_GRAPHS="support=mypkg.agent:graph")'
            )
        named = check_identifier("agent name", name.strip())
        if named in found:
            raise BadInput(f"WAYSTONE_GRAPHS names {named!r} twice; give each graph one name")
        found[named] = import_object("WAYSTONE_GRAPHS", ref.strip())
    return found


def compile_graph(
    name: str, source: GraphSource, saver: BaseCheckpointSaver[Any]
) -> Pregel[Any, Any, Any, Any]:
    """``source`` compiled (or copied) with ``saver`` as its checkpointer."""
    from langgraph.graph import StateGraph
    from langgraph.pregel import Pregel

    try:
        built = source
        if not isinstance(built, StateGraph | Pregel) and callable(built):
            built = built()
        if isinstance(built, StateGraph):
            built = built.compile(checkpointer=saver)
        elif isinstance(built, Pregel):
            built = built.copy(update={"checkpointer": saver})
    except Exception as exc:  # the user's code: whatever it raises, the graph is unusable
        raise BadInput(f"graph {name!r} cannot be built: {type(exc).__name__}: {exc}") from exc
    if not isinstance(built, Pregel):
        raise BadInput(
            f"graph {name!r} is a {type(source).__name__}: register a StateGraph "
            "(uncompiled), a function returning one, or a functional-API @entrypoint"
        )
    if built.interrupt_before_nodes or built.interrupt_after_nodes:
        # a static breakpoint stops the graph with nothing pending to answer: no run could
        # tell it from the graph's end
        raise BadInput(
            f"graph {name!r} is compiled with interrupt_before/interrupt_after: call "
            "interrupt() in the node instead (the run waits on it, and resume answers it)"
        )
    return built


def needs_async(graph: Pregel[Any, Any, Any, Any]) -> bool:
    """Whether a compiled graph has a node (in it or in a subgraph) that is only async
    (``async def``): ``invoke`` refuses those, only ``ainvoke`` runs them."""
    from langgraph._internal._runnable import RunnableCallable
    from langgraph.pregel import Pregel

    for node in graph.nodes.values():
        bound = node.bound
        if isinstance(bound, RunnableCallable) and bound.func is None and bound.afunc:
            return True
        if isinstance(bound, Pregel) and needs_async(bound):
            return True
    return False


def check_names(agents: Mapping[str, object], graphs: Mapping[str, object]) -> None:
    """A name runs one thing: an agent or a graph, never both."""
    both = sorted(set(agents) & set(graphs))
    if both:
        raise BadInput(f"{', '.join(both)}: registered both as an agent and as a graph; rename one")
