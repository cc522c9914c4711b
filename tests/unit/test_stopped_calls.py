"""The pure parts of answering the tool calls a stopped run left: which calls, under which
state key, how the run stopped, what the ledger knows, what the model is told, where the
answers go and as which node."""

from __future__ import annotations

import functools
import operator
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.channels import DeltaChannel
from langgraph.graph import START, StateGraph, add_messages
from langgraph.prebuilt import ToolNode
from langgraph.types import Overwrite

from waystone._runs.registry import PastRun
from waystone._runtime.stopped_calls import (
    Unanswered,
    answer_text,
    answers,
    effects_of,
    how_stopped,
    left_by_stop,
    messages_keys,
    placed,
    reducer_of,
    tool_node,
    unanswered,
    update_of,
)
from waystone.effects._ledger import Effect
from waystone.errors import PermanentError

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CALL = Unanswered("messages", "c1", "book", {"city": "Lisbon"})


class Chat(TypedDict):
    history: Annotated[list[AnyMessage], add_messages]
    notes: Annotated[list[str], operator.add]


class Plain(TypedDict):
    messages: list[AnyMessage]


@tool
def book(city: str) -> str:
    """Book a trip."""
    return city


def compiled(schema: Any, tool_nodes: int = 0) -> Any:
    builder: StateGraph[Any] = StateGraph(schema)
    builder.add_node("agent", lambda state: {})
    builder.add_edge(START, "agent")
    for n in range(tool_nodes):
        builder.add_node(f"tools{n}", ToolNode([book], messages_key="history"))
        builder.add_edge("agent", f"tools{n}")
    return builder.compile()


def effect(
    status: str,
    *,
    at: datetime = T0,
    receipt: dict[str, Any] | None = None,
    call: str | None = None,
    key: str = "ws-book-1",
) -> Effect:
    return Effect(
        key=key,
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
        tool_call_id=call,
    )


def past(state: str, evidence: dict[str, Any]) -> PastRun:
    return PastRun("t", 1, "g", "goal", {}, None, state, "why", evidence, 1, 0, T0, T0)


def calling(*ids: str) -> AIMessage:
    calls = [{"name": "book", "args": {"city": "Lisbon"}, "id": i} for i in ids]
    return AIMessage("", tool_calls=calls, id=f"ai-{'-'.join(ids)}")


def test_the_messages_keys_are_the_lists_that_hold_an_ai_message() -> None:
    values = {"history": [HumanMessage("hi"), calling("a")], "notes": ["x"], "n": 3}
    assert messages_keys(values) == ["history"]
    assert messages_keys({"history": [HumanMessage("hi")]}) == []
    assert messages_keys(None) == []


def test_a_channels_reducer_is_found_however_the_channel_holds_it() -> None:
    assert reducer_of(compiled(Chat).channels["history"]) is not None
    with_format = functools.partial(add_messages, format="langchain-openai")
    assert reducer_of(DeltaChannel(with_format)) is with_format  # kept as `.reducer`
    assert reducer_of(compiled(Chat).channels["notes"]) is operator.add
    assert reducer_of(compiled(Plain).channels["messages"]) is None


def test_calls_without_a_tool_message_are_found_in_order() -> None:
    history = [HumanMessage("hi"), calling("a", "b"), ToolMessage("ok", tool_call_id="a")]
    history += [calling("c")]
    found = unanswered({"history": history, "notes": []}, ["history"])
    assert [(c.key, c.id) for c in found] == [("history", "b"), ("history", "c")]
    assert unanswered({"history": history[:1]}, ["history"]) == []
    assert unanswered(None, ["history"]) == []  # a graph whose state is not a dict


def test_how_the_stopped_run_stopped_comes_from_its_record() -> None:
    assert how_stopped(past("failed", {"cancelled": True, "by": "ops"})) == "was cancelled"
    interrupted = past("failed", {"cancelled": True, "multitask": "interrupt"})
    assert how_stopped(interrupted) == "was interrupted by a new run"
    assert how_stopped(past("failed", {"multitask": "rollback"})) == "was rolled back by a new run"
    assert how_stopped(past("failed", {"multitask": "supersede"})) == (
        "was superseded by a new run"
    )
    assert how_stopped(past("failed", {"error": "boom"})) == "failed"
    assert how_stopped(None) == "stopped"


def test_only_a_state_a_stopped_run_left_is_answered() -> None:
    assert left_by_stop(past("failed", {"cancelled": True}), "its id")
    assert left_by_stop(None, None)  # an update since, such as a half-written answer
    assert not left_by_stop(past("done", {}), "its id")  # calls a graph leaves by design
    assert not left_by_stop(None, "a run not found before this one")


def test_a_call_gets_the_effect_made_for_its_own_tool_call_id() -> None:
    first, second = CALL, Unanswered("messages", "c2", "book", {"city": "Lisbon"})
    mine = effect("applied", call="c1", key="k1")
    theirs = effect("intent", call="c2", key="k2", at=T0 + timedelta(seconds=1))
    # two identical calls in one message: each its own
    assert effects_of([first, second], [mine, theirs]) == {"c1": mine, "c2": theirs}
    # a call stopped before its intent was recorded: no earlier identical call's effect
    assert effects_of([second], [mine]) == {"c2": None}


def test_rows_without_a_tool_call_id_are_matched_by_tool_and_arguments_once() -> None:
    first, second = CALL, Unanswered("messages", "c2", "book", {"city": "Lisbon"})
    old = effect("confirmed", key="k1")
    new = effect("intent", key="k2", at=T0 + timedelta(minutes=2))
    assert effects_of([first, second], [old, new]) == {"c1": new, "c2": old}
    other = Unanswered("messages", "c3", "book", {"city": "Porto"})
    assert effects_of([other], [old, new]) == {"c3": None}


def test_the_answer_says_what_the_ledger_knows() -> None:
    unknown = answer_text(CALL, "was cancelled", None)
    assert unknown.startswith("Tool call book was cancelled: its run was cancelled before")
    assert "no record" in unknown and "unknown" in unknown and "not retried" not in unknown
    kept = {"message": {"content": "booked bk-7 for Lisbon", "status": "success"}}
    applied = answer_text(CALL, "failed", effect("applied", receipt=kept))
    assert "applied all the same (ledger key ws-book-1)" in applied
    assert "It returned: booked bk-7 for Lisbon" in applied and "Do not call it again" in applied
    durable = answer_text(CALL, "failed", effect("applied", receipt={"output": {"id": "b7"}}))
    assert "(receipt b7)" in durable
    assert "unknown" in answer_text(CALL, "was interrupted by a new run", effect("intent"))
    assert "refused" in answer_text(CALL, "failed", effect("failed"))
    waiting = answer_text(CALL, "was superseded by a new run", effect("interrupted"))
    assert "interrupt()" in waiting and "made no effect" not in waiting


def test_an_answer_goes_right_after_its_call_and_the_results_that_follow_it() -> None:
    found = answers([CALL], "was cancelled", [])
    answer = found["c1"]
    assert (answer.tool_call_id, answer.name, answer.status) == ("c1", "book", "error")
    ai, done = calling("c0", "c1"), ToolMessage("ok", tool_call_id="c0", id="t0")
    later = HumanMessage("thanks", id="h2")
    assert placed([HumanMessage("hi", id="h1"), ai, done, later], found)[2:] == [
        done,
        answer,
        later,
    ]
    assert placed([ai], found) == [ai, answer]


def test_the_update_rewrites_a_list_that_has_messages_after_the_call() -> None:
    found = answers([Unanswered("history", "c1", "book", {})], "failed", [])
    answer, ai, later = found["c1"], calling("c1"), HumanMessage("thanks", id="h2")
    calls = [Unanswered("history", "c1", "book", {})]
    assert update_of(compiled(Chat), {"history": [ai]}, calls, found) == {"history": [answer]}
    rewritten = update_of(compiled(Chat), {"history": [ai, later]}, calls, found)["history"]
    assert rewritten == Overwrite([ai, answer, later])
    own = [Unanswered("notes", "c1", "book", {})]  # a list reducer of the user's own
    assert update_of(compiled(Chat), {"notes": [ai, later]}, own, found) == {
        "notes": Overwrite([ai, answer, later])
    }
    plain = [Unanswered("messages", "c1", "book", {})]
    assert update_of(compiled(Plain), {"messages": [ai, later]}, plain, found) == {
        "messages": [ai, answer, later]  # no reducer: the whole list
    }


def test_the_answers_are_written_as_the_graphs_tool_node() -> None:
    assert tool_node(compiled(Chat, tool_nodes=1), set()) == "tools0"
    assert tool_node(compiled(Chat, tool_nodes=2), {"tools1"}) == "tools1"
    assert tool_node(compiled(Chat), {"agent"}) == "agent"  # a tool node of its own
    with pytest.raises(PermanentError, match="several ToolNodes \\(tools0, tools1\\)"):
        tool_node(compiled(Chat, tool_nodes=2), set())
    with pytest.raises(PermanentError, match="no ToolNode.*update_state"):
        tool_node(compiled(Chat), set())
