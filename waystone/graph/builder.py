"""Build and compile the agent graph: propose -> authorize -> execute -> confirm -> verify."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from waystone.graph import routing
from waystone.graph.ports import Ports
from waystone.graph.state import AgentState
from waystone.nodes.authorize import make_authorize
from waystone.nodes.confirm import make_confirm
from waystone.nodes.execute import make_execute
from waystone.nodes.propose import make_propose
from waystone.nodes.verify import CHECK_NODE, fan_out, make_check, make_verify

NODES = ("propose", "authorize", "execute", "confirm", "verify")


def build_graph(ports: Ports, checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any]:
    """The compiled graph. Invoke it with ``durability="sync"`` (the runtime does)."""
    graph: StateGraph[Any] = StateGraph(AgentState)
    graph.add_node("propose", make_propose(ports))
    graph.add_node("authorize", make_authorize(ports))
    graph.add_node("execute", make_execute(ports))
    graph.add_node("confirm", make_confirm(ports))
    graph.add_node(CHECK_NODE, make_check(ports))
    graph.add_node("verify", make_verify(ports))

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
