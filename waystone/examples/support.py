"""A user's own graph, as the README's "Bring your LangGraph graph" shows it: a draft, then
a person's review through ``interrupt()``. ``WAYSTONE_GRAPHS="support=waystone.examples.
support:builder"`` names it for the CLI and workers."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class Chat(TypedDict, total=False):
    question: str
    log: Annotated[list[str], operator.add]


def draft(state: Chat) -> dict[str, Any]:
    return {"log": [f"drafted an answer to {state['question']!r}"]}


def review(state: Chat) -> dict[str, Any]:
    verdict = interrupt({"please review": state["question"]})  # waits, holding no process
    return {"log": [f"reviewer said {verdict}"]}


builder: StateGraph[Any] = StateGraph(Chat)
builder.add_node("draft", draft)
builder.add_node("review", review)
builder.add_edge(START, "draft")
builder.add_edge("draft", "review")
builder.add_edge("review", END)
