"""A new run on a thread whose run is active, through ``Runtime.start_on_thread``, on a
real Postgres: runs queued ahead are stopped with the active one, a rollback of a
thread's first run starts from nothing, and a queued run's input is stored redacted."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.conftest import wait_until
from tests.support.chat import say
from tests.support.gated import gated_graph
from waystone.config import Settings
from waystone.errors import LeaseLost
from waystone.runtime import Runtime
from waystone.web.shapes import jsonable


@pytest.fixture
def rt_graphs(gates: Path) -> dict[str, Any]:
    return {"gated": gated_graph}


def texts(rt: Runtime, thread_id: str) -> list[str]:
    values = jsonable(rt.graph("gated").get_state(rt.config(thread_id)).values)
    return [m["content"] for m in values.get("messages", [])]


def runs(rt: Runtime, thread_id: str) -> list[tuple[int, str, str | None]]:
    return [(r["run"], r["state"], r["stopped_as"]) for r in rt.history(thread_id)["runs"]]


def test_interrupt_stops_the_queued_runs_ahead_too(
    rt: Runtime, gates: Path, sql: psycopg.Connection[Any]
) -> None:
    thread_id = rt.create_thread().thread_id
    first = rt.start_on_thread("gated", say("a"), thread_id=thread_id)
    queued = rt.start_on_thread(
        "gated", say("mail ana@example.com"), thread_id=thread_id, multitask_strategy="enqueue"
    )
    assert (first.run_number, queued.run_number, queued.state) == (1, 2, "queued")
    stored = sql.execute("SELECT input::text FROM waystone.pending_runs").fetchone()
    assert stored is not None and "ana@example.com" not in stored[0]  # redacted as a run's
    last = rt.start_on_thread(
        "gated", say("c"), thread_id=thread_id, multitask_strategy="interrupt"
    )
    assert (last.run_number, last.state) == (3, "queued")
    assert rt.run_status(thread_id, 2) is not None
    assert runs(rt, thread_id) == [
        (1, "failed", "interrupt"),
        (2, "failed", "interrupt"),
        (3, "queued", None),
    ]
    assert sql.execute("SELECT count(*) FROM waystone.pending_runs").fetchone() == (0,)
    (gates / "c").touch()
    assert rt.run(thread_id).state == "done"
    assert texts(rt, thread_id) == ["c", "noted c", "done c"]


def test_a_rollback_of_a_threads_first_run_starts_from_nothing(rt: Runtime, gates: Path) -> None:
    thread_id = rt.create_thread().thread_id
    rt.start_on_thread("gated", say("a"), thread_id=thread_id)
    outcome: list[BaseException | str] = []

    def drive() -> None:
        try:
            outcome.append(rt.run(thread_id).state)
        except BaseException as exc:  # the drive is fenced out: that is what is checked
            outcome.append(exc)

    driving = threading.Thread(target=drive)
    driving.start()
    wait_until(lambda: "noted a" in texts(rt, thread_id), "the first run at its gate")
    second = rt.start_on_thread(
        "gated", say("b"), thread_id=thread_id, multitask_strategy="rollback"
    )
    assert texts(rt, thread_id) == []  # the state before the first run: none
    (gates / "a").touch()
    driving.join(timeout=60)
    assert len(outcome) == 1 and isinstance(outcome[0], LeaseLost)
    (gates / "b").touch()
    assert rt.run(thread_id).state == "done"
    assert texts(rt, thread_id) == ["b", "noted b", "done b"]
    assert second.run_id == rt.status(thread_id).run_id
    assert runs(rt, thread_id) == [(1, "failed", "rollback"), (2, "done", None)]
    every = rt.graph("gated").get_state_history(rt.config(thread_id))
    said = {m["content"] for s in every for m in jsonable(s.values).get("messages", [])}
    assert {"a", "noted a"} <= said  # the rolled-back run's checkpoints are kept


def test_the_queued_run_begins_in_the_commit_that_ends_the_run_before_it(
    rt: Runtime, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    thread_id = rt.create_thread().thread_id
    rt.start_on_thread("gated", say("a"), thread_id=thread_id)
    rt.start_on_thread("gated", say("b"), thread_id=thread_id, multitask_strategy="enqueue")
    end = "UPDATE waystone.runs SET state = 'failed', reason = 'ended' WHERE thread_id = %s"
    with psycopg.connect(database_url) as conn:
        conn.execute(end, (thread_id,))
        conn.rollback()  # a crash before the commit: neither happened
    assert (rt.status(thread_id).run_number, rt.status(thread_id).state) == (1, "queued")
    assert [p.run_number for p in rt.pending_runs(thread_id)] == [2]
    with psycopg.connect(database_url) as conn:
        conn.execute(end, (thread_id,))
        conn.commit()  # both happened
    assert (rt.status(thread_id).run_number, rt.status(thread_id).state) == (2, "queued")
    assert rt.pending_runs(thread_id) == []
    assert runs(rt, thread_id) == [(1, "failed", None), (2, "queued", None)]
    assert sql.execute("SELECT count(*) FROM waystone.pending_runs").fetchone() == (0,)


def test_a_queued_runs_input_is_sealed_at_rest_and_opened_when_it_runs(
    database_url: str, gates: Path, monkeypatch: pytest.MonkeyPatch, sql: psycopg.Connection[Any]
) -> None:
    monkeypatch.setenv("WAYSTONE_ENCRYPTION_KEY", "3c" * 32)
    with Runtime(Settings(database_url=database_url), graphs={"gated": gated_graph}) as rt:
        thread_id = rt.create_thread().thread_id
        rt.start_on_thread("gated", say("a"), thread_id=thread_id)
        rt.start_on_thread("gated", say("the secret plan"), thread_id=thread_id)
        stored = sql.execute("SELECT input::text, goal FROM waystone.pending_runs").fetchone()
        assert stored is not None and "secret" not in stored[0] + stored[1]
        rt.cancel(thread_id, by="tester", reason="the next one, please")
        (gates / "the secret plan").touch()
        assert rt.run(thread_id).state == "done"
        assert texts(rt, thread_id)[-3:] == [
            "the secret plan",
            "noted the secret plan",
            "done the secret plan",
        ]
