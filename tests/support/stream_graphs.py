"""Graphs for the stream modes' tests: a graph whose second node is a subgraph."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import MessagesState, StateGraph

from tests.support.chain import chain


def _first(state: MessagesState) -> dict[str, list[AnyMessage]]:
    return {"messages": [AIMessage(f"first of {len(state['messages'])}")]}


def _inner(state: MessagesState) -> dict[str, list[AnyMessage]]:
    return {"messages": [AIMessage(f"inner {state['messages'][-1].content}")]}


def nested_graph() -> StateGraph[Any]:
    """``first``, then ``child``: a subgraph of one node, ``inner``."""
    child = chain(MessagesState, ("inner", _inner))
    return chain(MessagesState, ("first", _first), ("child", child.compile()))
