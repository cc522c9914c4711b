"""The shape of most test graphs: nodes run one after another."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph


def chain(state: Any, *nodes: tuple[str, Any]) -> StateGraph[Any]:
    """A graph on ``state`` running ``nodes`` (name, node) in turn: START -> each -> END."""
    builder: StateGraph[Any] = StateGraph(state)
    builder.add_sequence(list(nodes))
    builder.add_edge(START, nodes[0][0])
    builder.add_edge(nodes[-1][0], END)
    return builder
