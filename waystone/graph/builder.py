"""Build and compile the agent graph: propose -> authorize -> execute -> confirm -> verify."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from waystone.graph import routing
from waystone.graph.ports import Ports
from waystone.graph.state import AgentState, changes
from waystone.nodes.authorize import make_authorize
from waystone.nodes.confirm import make_confirm
from waystone.nodes.execute import make_execute
from waystone.nodes.propose import make_propose
from waystone.nodes.verify import CHECK_NODE, fan_out, make_check, make_verify

NODES = ("propose", "authorize", "execute", "confirm", "verify")


def build_graph(ports: Ports, checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any]:
    """The compiled graph. Invoke it with ``durability="sync"`` (the runtime does)."""
    graph: StateGraph[Any] = StateGraph(AgentState)
    graph.add_node("propose", writing_changes(make_propose(ports)))
    graph.add_node("authorize", writing_changes(make_authorize(ports)))
    graph.add_node("execute", writing_changes(make_execute(ports)))
    graph.add_node("confirm", writing_changes(make_confirm(ports)))
    graph.add_node(CHECK_NODE, make_check(ports))  # given a check's task, not the state
    graph.add_node("verify", writing_changes(make_verify(ports)))

    def checks_or_end(state: AgentState, nxt: str) -> Any:
        if nxt == "end":
            return END
        if nxt == "verify-checks":
            sends = fan_out(ports, state)
            return sends or "verify"
        return nxt

    graph.add_edge(START, "propose")
    graph.add_conditional_edges(
        "propose",
        lambda s: checks_or_end(s, routing.after_propose(s)),
        ["authorize", CHECK_NODE, "verify", END],
    )
    graph.add_conditional_edges(
        "authorize",
        lambda s: checks_or_end(s, routing.after_authorize(s)),
        ["execute", "authorize", END],
    )
    graph.add_conditional_edges(
        "execute",
        lambda s: checks_or_end(s, routing.after_execute(s)),
        ["confirm", "propose", END],
    )
    graph.add_conditional_edges(
        "confirm",
        lambda s: checks_or_end(s, routing.after_confirm(s)),
        [CHECK_NODE, "verify", END],
    )
    graph.add_edge(CHECK_NODE, "verify")
    graph.add_conditional_edges(
        "verify", lambda s: checks_or_end(s, routing.after_verify(s)), ["propose", END]
    )
    return graph.compile(checkpointer=checkpointer)


class Node(Protocol):
    def __call__(self, state: AgentState, config: RunnableConfig) -> dict[str, Any]: ...


def writing_changes(node: Callable[..., dict[str, Any]]) -> Node:
    """``node``, writing only what it changes (see ``state.changes``)."""
    takes_config = node.__code__.co_argcount > 1

    def step(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        update = node(state, config) if takes_config else node(state)
        return changes(state, update)

    step.__name__ = step.__qualname__ = node.__name__
    return step
