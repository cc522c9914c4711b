"""Every tool call of LangGraph's ``ToolNode`` through the effect ledger, with nothing wrapped
by the user: what makes a brought graph safe by default.

:func:`route_tool_nodes` copies a compiled graph whose nodes (or subgraphs' nodes) are
``ToolNode`` s, each copy given a ``wrap_tool_call`` (inside the user's own, if any) that
routes a call by its tool's kind (:mod:`waystone.effects._kinds`): through the ledger
(:mod:`waystone.effects._tool_calls`: at most once for a tool that declares nothing),
called again (:mod:`waystone.effects._read_only`), or as it is (a durable tool, which has
its own ledger entry; a tool whose effects are ``@effect`` s inside it). A subgraph a node
function calls (LangGraph finds it among the function's references) cannot be swapped for
a copy without changing the user's function: one with a tool that needs the ledger is
refused at registration, saying what to do.

A ``needs-human`` (or a lost lease) is raised through ``ToolNode`` as a control-flow
exception, which it never turns into a message for the model, and out of the node as
itself (:mod:`waystone.effects._stop`): a model told "error" could call the tool again
under a new call id.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from waystone.effects._kinds import ToolKind, tool_kind
from waystone.effects._read_only import retrying
from waystone.effects._stop import Stop, routed, stops_kept
from waystone.effects._tool_calls import AExecute, Execute, LedgeredCall, errors_kept
from waystone.effects.lc_tools import DurableTool
from waystone.errors import BadInput

if TYPE_CHECKING:
    from langgraph.prebuilt import ToolNode
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.pregel import Pregel


def route_tool_nodes(
    graph: Pregel[Any, Any, Any, Any], name: str = "graph"
) -> Pregel[Any, Any, Any, Any]:
    """``graph``, or a copy whose ``ToolNode`` s (its own and its subgraphs') route each tool
    call by its kind. The user's graph, nodes and tools are left as they are.
    :class:`BadInput` when a node function calls a subgraph with a tool that needs the
    ledger: that call would be made again after a crash."""
    from langgraph.prebuilt import ToolNode
    from langgraph.pregel import Pregel

    changed = {}
    for node_name, node in graph.nodes.items():
        bound = node.bound
        if isinstance(bound, ToolNode):
            changed[node_name] = node.copy({"bound": _routed(bound)})
        elif isinstance(bound, Pregel):
            inner = route_tool_nodes(bound, f"{name}/{node_name}")
            if inner is not bound:  # LangGraph finds a node's subgraph by `subgraphs`
                changed[node_name] = node.copy({"bound": inner, "subgraphs": [inner]})
        elif node.subgraphs:
            _refuse_hidden(f"{name}/{node_name}", node.subgraphs[0])
    if not changed:
        return graph
    return graph.copy(update={"nodes": {**graph.nodes, **changed}})


def _refuse_hidden(where: str, subgraph: Any) -> None:
    """:class:`BadInput` when ``subgraph`` (called from the node function at ``where``) has
    a ``ToolNode`` with a tool that needs the ledger."""
    found = sorted(set(_unsafe_tools(subgraph)))
    if found:
        raise BadInput(
            f"node {where} calls a compiled subgraph whose tools {', '.join(found)} Waystone "
            "cannot route through the effect ledger (it is called from inside your "
            "function), so a crash could call them again: add the subgraph as a node "
            "(builder.add_node(name, subgraph)), wrap each tool with "
            "waystone.durable_tool(..., idempotent_by_key=/lookup=/read_only=), or opt out "
            'with tools="as-is"'
        )


def _unsafe_tools(graph: Any) -> list[str]:
    """Names of the tools in ``graph``'s ``ToolNode`` s (at any depth) that only the
    ledger makes safe: those that declare nothing, or only an MCP ``idempotentHint``."""
    from langgraph.prebuilt import ToolNode
    from langgraph.pregel import Pregel

    if not isinstance(graph, Pregel):
        return []
    found: list[str] = []
    for node in graph.nodes.values():
        if isinstance(node.bound, ToolNode):
            for tool in node.bound.tools_by_name.values():
                kind = tool_kind(tool.metadata, durable=isinstance(tool, DurableTool))
                if kind in (ToolKind.AT_MOST_ONCE, ToolKind.IDEMPOTENT):
                    found.append(tool.name)
        for subgraph in node.subgraphs:
            found.extend(_unsafe_tools(subgraph))
    return found


def _routed(node: ToolNode) -> ToolNode:
    """A copy of ``node`` whose tool calls go through :func:`call_tool`, inside the wrappers
    it has (a ``create_agent`` middleware's): they see what the model will see."""
    clone = copy.copy(node)
    theirs, atheirs = node._wrap_tool_call, node._awrap_tool_call

    def wrap(request: ToolCallRequest, execute: Execute) -> Any:
        if theirs is None:
            return call_tool(request, execute)
        return theirs(request, lambda req: call_tool(req, execute))

    async def awrap(request: ToolCallRequest, execute: AExecute) -> Any:
        if atheirs is None:
            return await acall_tool(request, execute)
        return await atheirs(request, lambda req: acall_tool(req, execute))

    clone._wrap_tool_call = wrap
    # a sync wrapper of theirs alone is what ToolNode runs for an async call: ours in it
    clone._awrap_tool_call = awrap if atheirs is not None or theirs is None else None
    clone.func = _unstopping(clone._func)  # bound to the copy, not to the user's node
    clone.afunc = _aunstopping(clone._afunc)
    return clone


def _unstopping(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` raising the error a :class:`Stop` carries, also when a wrapper of the
    user's caught it and the node returned."""

    @functools.wraps(func)
    def run(*args: Any, **kwargs: Any) -> Any:
        with stops_kept() as kept, errors_kept():
            try:
                out = func(*args, **kwargs)
            except Stop as stop:
                raise stop.error from stop.error.__cause__
        if kept:
            raise kept[0].error from kept[0].error.__cause__
        return out

    return run


def _aunstopping(func: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(func)
    async def run(*args: Any, **kwargs: Any) -> Any:
        with stops_kept() as kept, errors_kept():
            try:
                out = await func(*args, **kwargs)
            except Stop as stop:
                raise stop.error from stop.error.__cause__
        if kept:
            raise kept[0].error from kept[0].error.__cause__
        return out

    return run


def _kind(request: ToolCallRequest) -> ToolKind | None:
    """The call's kind; ``None`` for a call to no tool of the node (ToolNode answers it)."""
    tool = request.tool
    if tool is None:
        return None
    return tool_kind(tool.metadata, durable=isinstance(tool, DurableTool))


def call_tool(request: ToolCallRequest, execute: Execute) -> Any:
    """One tool call of a routed ``ToolNode``, by its tool's kind."""
    kind = _kind(request)
    with routed():
        if kind is ToolKind.READ_ONLY:
            return execute(retrying(request))
        if kind in (ToolKind.AT_MOST_ONCE, ToolKind.IDEMPOTENT):
            return LedgeredCall(request, kind).call(execute)
        return execute(request)  # a durable tool's own ledger; effects inside; no tool


async def acall_tool(request: ToolCallRequest, execute: AExecute) -> Any:
    """:func:`call_tool` from a coroutine."""
    kind = _kind(request)
    with routed():
        if kind is ToolKind.READ_ONLY:
            return await execute(retrying(request))
        if kind in (ToolKind.AT_MOST_ONCE, ToolKind.IDEMPOTENT):
            return await LedgeredCall(request, kind).acall(execute)
        return await execute(request)
