"""A graph that shows what a run was given besides its input: its config's
``configurable`` and LangGraph's runtime context, in two steps (for breakpoints)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import StateGraph
from langgraph.runtime import Runtime

from tests.support.chain import chain


class Log(TypedDict, total=False):
    text: str
    log: Annotated[list[str], operator.add]


def _first(state: Log, config: RunnableConfig) -> dict[str, Any]:
    persona = config.get("configurable", {}).get("persona", "none")
    return {"log": [f"first: {state.get('text')} as {persona}"]}


def _second(state: Log, runtime: Runtime[Any]) -> dict[str, Any]:
    context = runtime.context or {}
    return {"log": [f"second: tone {context.get('tone', 'none')}"]}


def two_steps() -> StateGraph[Any]:
    return chain(Log, ("first", _first), ("second", _second))
