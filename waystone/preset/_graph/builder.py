"""Build and compile the agent graph: propose -> authorize -> execute -> confirm -> verify.

Each node routes itself: it returns a ``Command`` with its update and where the graph goes
next, worked out by the pure functions of :mod:`waystone.preset._graph.routing` on the state as
the next step will read it. The same as a conditional edge after the node, without the
edge's own runnable and callbacks on every step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from waystone.preset._graph import routing
from waystone.preset._graph.ports import Ports
from waystone.preset._graph.state import AgentState, applied, changes
from waystone.preset._nodes.authorize import make_authorize
from waystone.preset._nodes.confirm import make_confirm
from waystone.preset._nodes.execute import make_execute
from waystone.preset._nodes.propose import make_propose
from waystone.preset._nodes.verify import CHECK_NODE, fan_out, make_check, make_verify

if TYPE_CHECKING:
    from waystone.preset.spec import AgentSpec

NODES = ("propose", "authorize", "execute", "confirm", "verify")

ROUTES: dict[str, Callable[[AgentState], str]] = {
    "propose": routing.after_propose,
    "authorize": routing.after_authorize,
    "execute": routing.after_execute,
    "confirm": routing.after_confirm,
    "verify": routing.after_verify,
}
DESTINATIONS: dict[str, tuple[str, ...]] = {  # for drawing the graph
    "propose": ("authorize", "propose", CHECK_NODE, "verify", END),
    "authorize": ("execute", "authorize", END),
    "execute": ("confirm", "propose", END),
    "confirm": (CHECK_NODE, "verify", END),
    "verify": ("propose", END),
}


def build_graph(ports: Ports, checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any]:
    """The compiled graph. Invoke it with ``durability="sync"`` (the runtime does)."""
    graph: StateGraph[Any] = StateGraph(AgentState)
    makers = {
        "propose": make_propose,
        "authorize": make_authorize,
        "execute": make_execute,
        "confirm": make_confirm,
        "verify": make_verify,
    }
    for name in NODES:
        node = routed(name, makers[name](ports), ports.agent)
        graph.add_node(name, node, destinations=DESTINATIONS[name])
    graph.add_node(CHECK_NODE, make_check(ports))  # given a check's task, not the state
    graph.add_edge(START, "propose")
    graph.add_edge(CHECK_NODE, "verify")
    return graph.compile(checkpointer=checkpointer)


def goto(agent: AgentSpec, after: str, state: AgentState | dict[str, Any]) -> Any:
    """Where the graph goes once node ``after`` left ``state``: a node, the agent's checks
    (one ``Send`` each), or the end."""
    nxt = ROUTES[after](state)  # type: ignore[arg-type]
    if nxt == "end":
        return END
    if nxt == "verify-checks":
        return fan_out(agent, state) or "verify"  # type: ignore[arg-type]
    return nxt


class Node(Protocol):
    def __call__(self, state: AgentState, config: RunnableConfig) -> Command[Any]: ...


def routed(
    name: str, node: Callable[[AgentState, RunnableConfig], dict[str, Any]], agent: AgentSpec
) -> Node:
    """``node``, writing only what it changes (see ``state.changes``) and going where
    routing sends the state it leaves."""

    def step(state: AgentState, config: RunnableConfig) -> Command[Any]:
        update = changes(state, node(state, config))
        return Command(update=update, goto=goto(agent, name, applied(state, update)))

    step.__name__ = step.__qualname__ = node.__name__
    return step
