"""The pure parts of answering the tool calls a stopped run left: which calls, under which
state key, how the run stopped, what the ledger knows, and what the model is told."""

from __future__ import annotations

import operator
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.graph import START, StateGraph, add_messages

from waystone._runs.registry import PastRun
from waystone._runs.stopped_calls import (
    Unanswered,
    answer_text,
    answers,
    effect_of,
    how_stopped,
    left_by_stop,
    messages_keys,
    receipt_id,
    unanswered,
    update_of,
)
from waystone.effects._ledger import Effect

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CALL = Unanswered("messages", "c1", "book", {"city": "Lisbon"})


class Chat(TypedDict):
    history: Annotated[list[AnyMessage], add_messages]
    notes: Annotated[list[str], operator.add]


class Plain(TypedDict):
    messages: list[AnyMessage]


class Counts(TypedDict):
    notes: Annotated[list[str], operator.add]


def compiled(schema: Any) -> Any:
    builder: StateGraph[Any] = StateGraph(schema)
    builder.add_node("tools", lambda state: {})
    builder.add_edge(START, "tools")
    return builder.compile()


def effect(status: str, *, at: datetime = T0, receipt: dict[str, Any] | None = None) -> Effect:
    return Effect(
        key="ws-book-1",
        thread_id="t",
        ordinal=1,
        tool="book",
        args={"city": "Lisbon"},
        status=status,
        attempts=1,
        receipt=receipt,
        confirmation=None,
        error="refused" if status == "failed" else None,
        created_at=at,
        updated_at=at,
    )


def past(state: str, evidence: dict[str, Any]) -> PastRun:
    return PastRun("t", 1, "g", "goal", {}, None, state, "why", evidence, 1, 0, T0, T0)


def calling(*ids: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "book", "args": {}, "id": i} for i in ids])


def test_the_messages_key_is_any_add_messages_channel_or_messages() -> None:
    assert messages_keys(compiled(Chat)) == ["history"]
    assert messages_keys(compiled(Plain)) == ["messages"]
    assert messages_keys(compiled(Counts)) == []  # no chat history: nothing to answer


def test_calls_without_a_tool_message_are_found_in_order() -> None:
    history = [HumanMessage("hi"), calling("a", "b"), ToolMessage("ok", tool_call_id="a")]
    history += [calling("c")]
    found = unanswered({"history": history, "notes": []}, ["history"])
    assert [(c.key, c.id) for c in found] == [("history", "b"), ("history", "c")]
    assert unanswered({"history": history[:1]}, ["history"]) == []
    assert unanswered(None, ["history"]) == []  # a graph whose state is not a dict


def test_how_the_run_before_stopped_comes_from_its_record() -> None:
    assert how_stopped(past("failed", {"cancelled": True, "by": "ops"})) == "cancelled"
    assert how_stopped(past("failed", {"cancelled": True, "multitask": "interrupt"})) == (
        "interrupted"
    )
    assert how_stopped(past("failed", {"multitask": "rollback"})) == "rolled back"
    assert how_stopped(past("failed", {"multitask": "supersede"})) == "superseded"
    assert how_stopped(past("failed", {"error": "boom"})) == "failed"
    assert how_stopped(None) == "stopped"


def test_only_a_state_a_stopped_run_left_is_answered() -> None:
    stopped = past("failed", {"cancelled": True})
    assert left_by_stop(stopped, stopped.run_id)
    assert left_by_stop(stopped, None)  # an update since, such as a half-written answer
    assert not left_by_stop(stopped, "an earlier run's id")  # a rollback's, or never written
    assert not left_by_stop(past("done", {}), None)  # calls a graph leaves by design
    assert not left_by_stop(None, None)  # the thread's first run


def test_the_ledger_effect_of_a_call_is_its_tools_with_its_arguments_since_the_run() -> None:
    old, new = effect("confirmed", at=T0), effect("intent", at=T0 + timedelta(minutes=2))
    assert effect_of(CALL, [old, new], since=None) == new
    assert effect_of(CALL, [old], since=T0 + timedelta(minutes=1)) is None  # an earlier run's
    other = Unanswered("messages", "c2", "book", {"city": "Porto"})
    assert effect_of(other, [old, new], since=None) is None


def test_the_answer_says_what_the_ledger_knows() -> None:
    assert "not retried" in answer_text(CALL, "cancelled", None)
    applied = answer_text(CALL, "cancelled", effect("applied", receipt={"output": {"id": "b7"}}))
    assert "applied all the same (receipt b7)" in applied and "ws-book-1" in applied
    assert "unknown" in answer_text(CALL, "interrupted", effect("intent"))
    assert "refused" in answer_text(CALL, "failed", effect("failed"))
    assert "made no effect" in answer_text(CALL, "superseded", effect("interrupted"))
    assert answer_text(CALL, "cancelled", None).startswith(
        "Tool call book was not completed: the run was cancelled"
    )


def test_a_receipt_id_is_its_own_or_its_outputs() -> None:
    assert receipt_id({"id": 3}) == "3"
    assert receipt_id({"output": {"id": "bk-1"}}) == "bk-1"
    assert receipt_id({"output": "booked"}) is None
    assert receipt_id(None) is None


def test_answers_are_error_tool_messages_appended_as_the_key_takes_them() -> None:
    found = answers([CALL], "cancelled", [], since=None)
    [message] = found["messages"]
    assert (message.tool_call_id, message.name, message.status) == ("c1", "book", "error")
    before = [HumanMessage("hi"), calling("c1")]
    assert update_of(compiled(Plain), {"messages": before}, found) == {
        "messages": [*before, message]  # no reducer: the whole list
    }
    reduced = {"history": found["messages"]}
    assert update_of(compiled(Chat), {"history": before}, reduced) == reduced
