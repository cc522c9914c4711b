"""A graph that shows what a run was given besides its input: its config's
``configurable`` and LangGraph's runtime context, in two steps (for breakpoints); and a
chat whose turns make an effect, for runs that begin from a checkpoint."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import MessagesState, StateGraph
from langgraph.runtime import Runtime

from tests.support.chain import chain
from tests.support.effect_graphs import note_effect, payments_url


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


class PaidChat(MessagesState, total=False):
    receipts: Annotated[list[dict[str, Any]], operator.add]


def paid_chat() -> StateGraph[Any]:
    """A chat turn in two steps: ``pay`` sends a notification through the effect ledger
    (``body``: the question), then ``answer`` echoes the question: a run that forks
    between the two, or before ``pay``, shows which effects its branch makes."""
    notify = note_effect(payments_url())

    def pay(state: PaidChat) -> dict[str, Any]:
        asked = str(state["messages"][-1].content)
        return {"receipts": [notify(to="desk", body=f"asked: {asked}")]}

    def answer(state: PaidChat) -> dict[str, Any]:
        asked = next(m for m in reversed(state["messages"]) if m.type == "human")
        return {"messages": [AIMessage(f"echo {asked.content}")]}

    return chain(PaidChat, ("pay", pay), ("answer", answer))
