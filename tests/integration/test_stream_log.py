"""The stream log on a real Postgres: a run nobody streams is driven with ``invoke`` and
logs nothing; a logged run's live events are kept until it ended longer ago than the
retention, then swept."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import MessagesState
from langgraph.types import interrupt

from tests.support.chain import chain
from tests.support.live_graphs import ANSWER, GATE, live_graph
from waystone import Runtime
from waystone._runtime.options import RunOptions
from waystone._streams import drive

ASKED = {"messages": [{"role": "user", "content": "hello"}]}


def _ask(state: MessagesState) -> dict[str, list[AnyMessage]]:
    model = GenericFakeChatModel(messages=iter([AIMessage("may I?")]))
    asked = model.invoke(state["messages"])  # streamed again when the node runs again
    return {"messages": [asked, AIMessage(f"told {interrupt(asked.content)}")]}


@pytest.fixture
def rt_graphs() -> dict[str, Any]:
    return {"live": live_graph, "ask": chain(MessagesState, ("ask", _ask))}


@pytest.fixture
def opened(gates: Path) -> None:
    (gates / GATE).write_text("")  # the model never holds


def _rows(sql: psycopg.Connection[Any], table: str) -> int:
    found = sql.execute(f"SELECT count(*) FROM waystone.{table}").fetchone()
    assert found is not None
    return int(found[0])


def test_a_run_nobody_streams_is_invoked_and_logs_nothing(
    rt: Runtime, opened: None, sql: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    def streamed(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a run nobody streams is driven with invoke")

    monkeypatch.setattr(drive, "stream", streamed)
    started = rt.start("live", ASKED)
    assert rt.run(started.thread_id).state == "done"
    values = rt.graph("live").get_state(rt.config(started.thread_id)).values
    assert values["messages"][-1].content == ANSWER
    assert (_rows(sql, "stream_logs"), _rows(sql, "stream_events")) == (0, 0)


def test_a_logged_run_is_kept_until_it_ended_longer_ago_than_the_retention(
    rt: Runtime, opened: None, sql: psycopg.Connection[Any]
) -> None:
    ended = rt.start("live", ASKED, options=RunOptions(stream_log=True))
    assert rt.run(ended.thread_id).state == "done"
    going = rt.start("live", ASKED, options=RunOptions(stream_log=True))  # not driven yet
    rt.log_stream(going.thread_id, 1)  # marked again, by a join: nothing changes
    logged = _rows(sql, "stream_events")
    assert logged > len(ANSWER.split())  # its tokens, its custom event, its marks
    assert rt.sweep_stream_logs() == 0  # ended just now
    sql.execute(
        "UPDATE waystone.runs SET updated_at = now() - interval '2 hours' "
        "WHERE thread_id = ANY(%s)",
        ([ended.thread_id, going.thread_id],),
    )
    assert rt.sweep_stream_logs() == 1  # the one that ended; the queued one is kept
    kept = sql.execute("SELECT run_id FROM waystone.stream_logs").fetchall()
    assert kept == [(going.run_id,)]
    assert _rows(sql, "stream_events") == 0


def test_a_logged_run_driven_on_an_event_loop_logs_its_tokens(
    rt: Runtime, opened: None, sql: psycopg.Connection[Any]
) -> None:
    started = rt.start("live", ASKED, options=RunOptions(stream_log=True))
    assert asyncio.run(rt.arun(started.thread_id)).state == "done"
    logged = sql.execute(
        "SELECT event, attempt FROM waystone.stream_events ORDER BY event_key"
    ).fetchall()
    said = [event for event, _ in logged if event]  # marks have no name
    assert said == ["custom"] + ["messages"] * len(re.split(r"(\s)", ANSWER))
    assert {attempt for _, attempt in logged} == {1}


def test_a_resume_after_an_interrupt_abandons_nothing(
    rt: Runtime, sql: psycopg.Connection[Any]
) -> None:
    started = rt.start("ask", ASKED, options=RunOptions(stream_log=True))
    assert rt.run(started.thread_id).state == "waiting"
    rt.resume(started.thread_id, "yes")
    assert rt.run(started.thread_id).state == "done"
    logged = sql.execute(
        "SELECT event, attempt FROM waystone.stream_events WHERE event <> '' ORDER BY event_key"
    ).fetchall()
    assert {event for event, _ in logged} == {"messages"}  # no waystone/abandoned
    assert sorted({attempt for _, attempt in logged}) == [1, 2]  # the node ran twice
