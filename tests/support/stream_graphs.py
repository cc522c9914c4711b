"""Graphs for the stream modes' tests: a graph whose second node is a subgraph."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, MessagesState, StateGraph


def _first(state: MessagesState) -> dict[str, list[AnyMessage]]:
    return {"messages": [AIMessage(f"first of {len(state['messages'])}")]}


def _inner(state: MessagesState) -> dict[str, list[AnyMessage]]:
    return {"messages": [AIMessage(f"inner {state['messages'][-1].content}")]}


def nested_graph() -> StateGraph[Any]:
    """``first``, then ``child``: a subgraph of one node, ``inner``."""
    child: StateGraph[Any] = StateGraph(MessagesState)
    child.add_node("inner", _inner)
    child.add_edge(START, "inner")
    child.add_edge("inner", END)
    builder: StateGraph[Any] = StateGraph(MessagesState)
    builder.add_node("first", _first)
    builder.add_node("child", child.compile())
    builder.add_edge(START, "first")
    builder.add_edge("first", "child")
    builder.add_edge("child", END)
    return builder
