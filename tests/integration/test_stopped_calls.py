"""A thread stays usable after any stop in the middle of tool calls, on a real Postgres: a
cancel, an ``interrupt`` double-text, a failed run. The next run's message completes; the
stopped call is answered in the state with a ToolMessage (what the ledger knows of its
effect included), on the run's history; the signals the stopped run left are settled."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt

from tests.conftest import wait_until
from tests.support import stopped_agent
from tests.support.background import Background
from tests.support.chat import say
from tests.support.chat_models import ConversationModel
from tests.support.gated import gated_graph
from tests.support.inside import parts
from tests.support.stopped_agent import ANSWER, BookingDesk
from waystone._runs import dashboard
from waystone._runs.run_config import graph_config
from waystone.errors import LeaseLost, TransitionNotAllowed
from waystone.runtime import Runtime

pytestmark = pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecatedSinceV10")


@tool
def broken_book(city: str) -> str:
    """Book a trip to a city (its provider rejects every booking)."""
    raise RuntimeError(f"the booking provider rejected the booking for {city}")


def broken_agent() -> Any:
    return stopped_agent.agent([broken_book])


@tool
def book_after_approval(city: str) -> str:
    """Book a trip to a city, once a person approves."""
    if interrupt({"approve booking to": city}) != "yes":
        return "not approved"
    return stopped_agent._book(city)["id"]


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def book_and_look() -> Any:
    """The agent's model asks for a booking and the weather in one message."""
    return stopped_agent.agent([stopped_agent.book, weather])


def twin_bookings() -> Any:
    """The agent's model asks for the same booking twice in one message."""
    from langgraph.prebuilt import create_react_agent

    calls = [{"name": "book", "args": {"city": "Lisbon"}, "id": f"call_{n}"} for n in ("a", "b")]
    model = ConversationModel(responses=[AIMessage("", tool_calls=calls), AIMessage(ANSWER)])
    return create_react_agent(model, [stopped_agent.book])


def leaves_calls() -> Any:
    """A graph that ends on an AI message whose tool calls it never answers, by design."""

    def propose(state: MessagesState) -> dict[str, Any]:
        call = {"name": "book", "args": {"city": "Lisbon"}, "id": f"c{len(state['messages'])}"}
        return {"messages": [AIMessage("", tool_calls=[call])]}

    builder: StateGraph[Any] = StateGraph(MessagesState)
    builder.add_node("propose", propose)
    builder.add_edge(START, "propose")
    return builder


GRAPHS: dict[str, Callable[[], Any]] = {
    "leaves": leaves_calls,
    "twins": twin_bookings,
    "two-calls": book_and_look,
    "asks": lambda: stopped_agent.agent([book_after_approval]),
    "react": stopped_agent.react_agent,
    "react-v1": stopped_agent.react_agent_v1,
    "durable": stopped_agent.durable_react_agent,
    "broken": broken_agent,
    "gated": gated_graph,
}


@pytest.fixture
def rt_graphs(desk: BookingDesk, gates: Path) -> dict[str, Any]:
    return GRAPHS


def messages(rt: Runtime, graph: str, thread_id: str) -> list[BaseMessage]:
    found: list[BaseMessage] = rt.graph(graph).get_state(rt.config(thread_id)).values["messages"]
    return found


def fenced_out(desk: BookingDesk, driving: Background) -> None:
    """The held call let go: the stopped drive's late writes are refused."""
    desk.release()
    assert isinstance(driving.join(), LeaseLost)


def start_booking(rt: Runtime, desk: BookingDesk, graph: str) -> tuple[str, Background]:
    """A thread whose run's booking call is held at the provider."""
    thread_id = rt.create_thread().thread_id
    rt.start_on_thread(graph, say("book me a trip"), thread_id=thread_id)
    driving = Background(lambda: rt.run(thread_id).state)
    wait_until(lambda: desk.held() == 1, "the booking call at the provider")
    return thread_id, driving


def answered(found: list[BaseMessage]) -> ToolMessage:
    [message] = [m for m in found if isinstance(m, ToolMessage)]
    assert (message.tool_call_id, message.name, message.status) == ("call_book", "book", "error")
    return message


def events(rt: Runtime, thread_id: str, kind: str) -> list[dict[str, Any]]:
    return [e for e in rt.history(thread_id)["events"] if e["kind"] == kind]


def cancelled_in_its_call(rt: Runtime, desk: BookingDesk, graph: str) -> str:
    """A thread whose run was cancelled while its booking call was held: the call let go
    after, its drive fenced out."""
    thread_id, driving = start_booking(rt, desk, graph)
    rt.cancel(thread_id, by="ops", reason="too slow")
    fenced_out(desk, driving)
    return thread_id


@pytest.mark.parametrize("graph", ["react", "react-v1"])
def test_a_cancel_during_a_tool_call_leaves_the_thread_usable(
    rt: Runtime, desk: BookingDesk, graph: str
) -> None:
    thread_id, driving = start_booking(rt, desk, graph)
    rt.cancel(thread_id, by="ops", reason="the customer changed their mind")
    rt.start_on_thread(graph, say("thanks"), thread_id=thread_id)
    # the next run goes on while the stopped drive is still in its call
    assert rt.run(thread_id).state == "done"
    found = messages(rt, graph, thread_id)
    assert [m.type for m in found] == ["human", "ai", "tool", "human", "ai"]
    assert "cancelled" in str(answered(found).content)
    assert found[-1].content == ANSWER
    fenced_out(desk, driving)
    assert messages(rt, graph, thread_id) == found
    assert len(desk.requests) == 1  # the stopped call was never made again
    [event] = events(rt, thread_id, "tool-calls-answered")
    assert event["evidence"]["tool_calls"] == [{"id": "call_book", "name": "book"}]
    history = rt.graph(graph).get_state_history(rt.config(thread_id))
    assert any(s.metadata and s.metadata.get("source") == "update" for s in history)


def test_a_call_that_finished_before_the_cancel_keeps_its_result(
    rt: Runtime, desk: BookingDesk, sql: psycopg.Connection[Any]
) -> None:
    thread_id, driving = start_booking(rt, desk, "two-calls")
    # the weather call's task (a Send of its own) has its result saved by then
    wait_until(
        lambda: (
            sql.execute(
                "SELECT count(*) FROM checkpoint_writes WHERE thread_id = %s "
                "AND task_path LIKE %s AND channel = 'messages'",
                (thread_id, "~__pregel_push%"),
            ).fetchone()
            == (1,)
        ),
        "the weather call's result saved",
    )
    rt.cancel(thread_id, by="ops", reason="too slow")
    rt.start_on_thread("two-calls", say("thanks"), thread_id=thread_id)
    assert rt.run(thread_id).state == "done"
    found = messages(rt, "two-calls", thread_id)
    results = {m.tool_call_id: (m.status, m.content) for m in found if isinstance(m, ToolMessage)}
    assert results["call_weather"] == ("success", "sunny in Lisbon")
    assert results["call_book"][0] == "error" and "cancelled" in str(results["call_book"][1])
    [event] = events(rt, thread_id, "tool-calls-answered")
    assert event["evidence"]["tool_calls"] == [{"id": "call_book", "name": "book"}]
    fenced_out(desk, driving)


def test_the_interrupt_double_text_during_a_tool_call(rt: Runtime, desk: BookingDesk) -> None:
    thread_id, driving = start_booking(rt, desk, "react")
    rt.start_on_thread(
        "react", say("no, wait"), thread_id=thread_id, multitask_strategy="interrupt"
    )
    fenced_out(desk, driving)
    assert rt.run(thread_id).state == "done"
    found = messages(rt, "react", thread_id)
    assert "interrupted" in str(answered(found).content)
    assert [m.content for m in found][-2:] == ["no, wait", ANSWER]


def test_a_new_message_instead_of_an_answer_to_a_tools_interrupt(
    rt: Runtime, desk: BookingDesk
) -> None:
    thread_id = rt.create_thread().thread_id
    rt.start_on_thread("asks", say("book me a trip"), thread_id=thread_id)
    assert rt.run(thread_id).state == "waiting"
    rt.start_on_thread("asks", say("never mind"), thread_id=thread_id)  # supersedes it
    assert rt.run(thread_id).state == "done"
    found = messages(rt, "asks", thread_id)
    [message] = [m for m in found if isinstance(m, ToolMessage)]
    assert message.tool_call_id == "call_book" and message.status == "error"
    assert "superseded" in str(message.content)
    assert [m.content for m in found][-2:] == ["never mind", ANSWER]
    assert desk.requests == []  # the tool never ran past its question


def test_a_run_failed_during_a_tool_call_then_a_new_run(rt: Runtime) -> None:
    thread_id = rt.create_thread().thread_id
    rt.start_on_thread("broken", say("book me a trip"), thread_id=thread_id)
    assert rt.run(thread_id).state == "failed"
    rt.start_on_thread("broken", say("try again later"), thread_id=thread_id)
    assert rt.run(thread_id).state == "done"
    found = messages(rt, "broken", thread_id)
    [message] = [m for m in found if isinstance(m, ToolMessage)]
    assert (message.tool_call_id, message.name, message.status) == (
        "call_book",
        "broken_book",
        "error",
    )
    assert "failed" in str(message.content)
    assert found[-1].content == ANSWER


def test_an_answer_cut_short_by_a_crash_is_finished_by_the_next_drive(rt: Runtime) -> None:
    thread_id = rt.create_thread().thread_id
    rt.start_on_thread("broken", say("book me a trip"), thread_id=thread_id)
    assert rt.run(thread_id).state == "failed"
    rt.start_on_thread("broken", say("try again later"), thread_id=thread_id)
    # a drive cleared the stopped step, then died before it wrote the answers
    token = parts(rt).registry.get(thread_id).lease_token
    rt.graph("broken").update_state(graph_config(thread_id, lease_token=token), None, as_node=END)
    assert rt.run(thread_id).state == "done"
    found = messages(rt, "broken", thread_id)
    assert [m.type for m in found] == ["human", "ai", "tool", "human", "ai"]
    assert len(events(rt, thread_id, "tool-calls-answered")) == 1


def test_a_new_run_driven_on_an_event_loop_answers_the_calls_too(rt: Runtime) -> None:
    thread_id = rt.create_thread().thread_id
    rt.start_on_thread("broken", say("book me a trip"), thread_id=thread_id)
    assert rt.run(thread_id).state == "failed"
    rt.start_on_thread("broken", say("try again later"), thread_id=thread_id)
    assert asyncio.run(rt.arun(thread_id)).state == "done"
    found = messages(rt, "broken", thread_id)
    assert [m.type for m in found] == ["human", "ai", "tool", "human", "ai"]
    assert len(events(rt, thread_id, "tool-calls-answered")) == 1


def test_the_answer_says_the_ledger_shows_the_effect_applied(
    rt: Runtime, desk: BookingDesk
) -> None:
    thread_id = cancelled_in_its_call(rt, desk, "durable")
    [effect] = rt.history(thread_id)["effects"]
    assert effect["status"] == "applied"  # a late receipt: the booking landed
    rt.start_on_thread("durable", say("so, booked?"), thread_id=thread_id)
    assert rt.run(thread_id).state == "done"
    text = str(answered(messages(rt, "durable", thread_id)).content)
    assert "applied" in text and "bk-1" in text and effect["key"] in text
    assert len(desk.bookings) == 1


def test_signals_a_cancelled_run_left_are_settled(
    rt: Runtime, gates: Path, sql: psycopg.Connection[Any]
) -> None:
    thread_id = rt.create_thread().thread_id
    rt.start_on_thread("gated", say("refund?"), thread_id=thread_id)
    assert rt.run(thread_id).state == "waiting"
    rt.resume(thread_id, "yes", by="ana")
    rt.signal(thread_id, "nudge", {}, actor="ops")
    assert len(dashboard.snapshot(rt)["undelivered_signals"]) == 2
    rt.cancel(thread_id, by="ops", reason="not needed")
    assert dashboard.snapshot(rt)["undelivered_signals"] == []
    [event] = events(rt, thread_id, "signals-settled")
    assert [s["name"] for s in event["evidence"]["signals"]] == ["resume", "nudge"]
    assert "cancelled by ops" in event["reason"]
    pending = "SELECT count(*) FROM waystone.signals WHERE consumed_at IS NULL"
    assert sql.execute(pending).fetchone() == (0,)

    # requeued, the run goes on with the value it was given
    rt.requeue(thread_id, by="ops", reason="needed after all")
    assert sql.execute(pending).fetchone() == (2,)
    (gates / "refund?").touch()
    assert rt.run(thread_id).state == "done"
    said = [m.content for m in messages(rt, "gated", thread_id)]
    assert said == ["refund?", "a person says: yes", "done refund?"]


def test_a_value_recorded_after_the_cancel_is_refused_not_left_pending(
    rt: Runtime, sql: psycopg.Connection[Any]
) -> None:
    thread_id = rt.create_thread().thread_id
    rt.start_on_thread("gated", say("refund?"), thread_id=thread_id)
    assert rt.run(thread_id).state == "waiting"
    rt.cancel(thread_id, by="ops", reason="not needed")
    # what a resume that read the run as waiting, just before the cancel, goes on to do
    with pytest.raises(TransitionNotAllowed, match="has ended"):
        parts(rt).signals.record(thread_id, "resume", "i-1", {"value": "yes"}, actor="ana")
    with pytest.raises(TransitionNotAllowed):
        rt.signal(thread_id, "nudge", {}, actor="ops")
    pending = "SELECT count(*) FROM waystone.signals WHERE thread_id = %s"
    assert sql.execute(pending, (thread_id,)).fetchone() == (0,)
    assert dashboard.snapshot(rt)["undelivered_signals"] == []


def test_calls_a_run_that_ended_well_left_are_not_answered(rt: Runtime) -> None:
    thread_id = rt.create_thread().thread_id
    for text in ("first", "second"):
        rt.start_on_thread("leaves", say(text), thread_id=thread_id)
        assert rt.run(thread_id).state == "done"
    assert [m.type for m in messages(rt, "leaves", thread_id)] == ["human", "ai"] * 2
    assert events(rt, thread_id, "tool-calls-answered") == []


def test_a_run_cancelled_before_it_began_does_not_hide_the_stopped_one(
    rt: Runtime, desk: BookingDesk
) -> None:
    thread_id, driving = start_booking(rt, desk, "react")
    rt.cancel(thread_id, by="ops", reason="the customer changed their mind")
    rt.start_on_thread("react", say("hello?"), thread_id=thread_id)
    rt.cancel(thread_id, by="ops", reason="sent by mistake")  # before any worker takes it
    rt.start_on_thread("react", say("thanks"), thread_id=thread_id)
    assert rt.run(thread_id).state == "done"
    found = messages(rt, "react", thread_id)
    # the answer follows its call, before the next human message
    assert [m.type for m in found] == ["human", "ai", "tool", "human", "ai"]
    assert "its run was cancelled" in str(answered(found).content)
    fenced_out(desk, driving)


def test_the_answer_follows_its_call_when_a_failed_run_wrote_a_message_after_it(
    rt: Runtime, desk: BookingDesk
) -> None:
    thread_id = cancelled_in_its_call(rt, desk, "react")
    # a message written after the stopped call, by a run that failed without answering it
    token = parts(rt).registry.get(thread_id).lease_token
    config = graph_config(thread_id, lease_token=token)
    rt.graph("react").update_state(config, say("hello?"), as_node="__start__")
    rt.start_on_thread("react", say("thanks"), thread_id=thread_id)
    assert rt.run(thread_id).state == "done"
    found = messages(rt, "react", thread_id)
    assert [m.type for m in found] == ["human", "ai", "tool", "human", "human", "ai"]
    text = str(answered(found).content)
    # what the booking returned, as the ledger kept it: it landed after the cancel
    assert "applied all the same" in text and "It returned:" in text and "bk-1" in text
    assert len(desk.bookings) == 1


def test_two_identical_calls_are_each_answered_with_their_own_effect(
    rt: Runtime, desk: BookingDesk
) -> None:
    thread_id = rt.create_thread().thread_id
    rt.start_on_thread("twins", say("book me two trips"), thread_id=thread_id)
    driving = Background(lambda: rt.run(thread_id).state)
    wait_until(lambda: desk.held() == 2, "both booking calls at the provider")
    rt.cancel(thread_id, by="ops", reason="too slow")
    fenced_out(desk, driving)
    rt.start_on_thread("twins", say("so?"), thread_id=thread_id)
    assert rt.run(thread_id).state == "done"
    found = messages(rt, "twins", thread_id)
    texts = {m.tool_call_id: str(m.content) for m in found if isinstance(m, ToolMessage)}
    assert set(texts) == {"call_a", "call_b"}
    booked = [next(b for b in ("bk-1", "bk-2") if b in texts[c]) for c in ("call_a", "call_b")]
    assert sorted(booked) == ["bk-1", "bk-2"]  # not one receipt given to both
