"""Crons on a real Postgres: a due tick starts one run (on a new thread, or on the cron's
thread), a busy thread's tick is skipped and recorded, missed ticks run once, a deleted
or disabled cron starts nothing, and the input is stored redacted."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import pytest

from tests.conftest import wait_until
from tests.support.graphs import chat_graph
from waystone import Runtime, Settings
from waystone._runs import schedule
from waystone.errors import BadInput, UnknownThread

EVERY_MINUTE = "* * * * *"
EVERY_SECOND = "* * * * * *"
HELLO = {"messages": [{"role": "user", "content": "hello"}]}


@pytest.fixture
def rt_graphs() -> dict[str, Any]:
    return {"chat": chat_graph}


def overdue(sql: psycopg.Connection[Any], cron_id: str, by: str = "1 second") -> None:
    """As if the cron's tick came ``by`` ago (a tick's time, as a ticker finds it)."""
    sql.execute(
        "UPDATE waystone.crons SET next_run_date = date_trunc('minute', now() - %s::interval) "
        "WHERE cron_id = %s",
        (by, cron_id),
    )


def tick_once(rt: Runtime) -> None:
    """Tick until a tick of an every-second cron is taken (within a bounded wait)."""
    wait_until(lambda: rt.crons.tick(["chat"], "t1") == 1, "a tick taken", timeout=10)


def ticks(sql: psycopg.Connection[Any], cron_id: str) -> list[tuple[Any, ...]]:
    rows = sql.execute(
        "SELECT outcome, thread_id, start_key, missed FROM waystone.cron_ticks "
        "WHERE cron_id = %s ORDER BY tick_at",
        (cron_id,),
    ).fetchall()
    return [tuple(r) for r in rows]


def test_a_due_tick_starts_one_run_on_a_new_thread(
    rt: Runtime, sql: psycopg.Connection[Any]
) -> None:
    cron = rt.crons.create("chat", EVERY_MINUTE, HELLO)
    assert rt.crons.tick(["chat"], "t1") == 0  # not due yet
    overdue(sql, cron.cron_id)
    assert rt.crons.tick(["chat"], "t1") == 1
    [(outcome, thread_id, key, missed)] = ticks(sql, cron.cron_id)
    assert (outcome, missed) == ("started", 0)
    run = rt.status(thread_id)
    assert run.state == "queued" and run.agent == "chat"
    assert sql.execute(
        "SELECT start_key FROM waystone.runs WHERE thread_id = %s", (thread_id,)
    ).fetchone() == (key,)
    assert rt.crons.tick(["chat"], "t1") == 0  # the next tick is a minute on
    [(now,)] = sql.execute("SELECT now()").fetchall()
    assert rt.crons.get(cron.cron_id).next_run_date > now  # type: ignore[union-attr]


def test_two_tickers_at_once_start_one_run(database_url: str, sql: psycopg.Connection[Any]) -> None:
    settings = Settings.from_env(database_url=database_url)
    runtimes = [Runtime(settings, graphs={"chat": chat_graph}) for _ in range(4)]
    try:
        crons = [runtimes[0].crons.create("chat", EVERY_MINUTE, HELLO) for _ in range(5)]
        for cron in crons:
            overdue(sql, cron.cron_id)
        taken: list[int] = []
        go = threading.Barrier(len(runtimes))

        def tick(r: Runtime) -> None:
            go.wait()
            taken.append(r.crons.tick(["chat"], "racer"))

        racers = [threading.Thread(target=tick, args=(r,)) for r in runtimes]
        for t in racers:
            t.start()
        for t in racers:
            t.join(60)
        assert sum(taken) == len(crons)
        for cron in crons:
            assert [t[0] for t in ticks(sql, cron.cron_id)] == ["started"]
        started = sql.execute(
            "SELECT count(*) FROM waystone.runs WHERE start_key LIKE 'cron:%'"
        ).fetchone()
        assert started == (len(crons),)
    finally:
        for r in runtimes:
            r.close()


def test_a_thread_cron_runs_on_its_thread_and_skips_while_busy(
    rt: Runtime, sql: psycopg.Connection[Any]
) -> None:
    thread_id = rt.create_thread().thread_id
    cron = rt.crons.create("chat", EVERY_SECOND, HELLO, thread_id=thread_id)
    tick_once(rt)
    assert rt.status(thread_id).state == "queued"
    tick_once(rt)  # the thread's run is still queued: skipped
    [first, second] = ticks(sql, cron.cron_id)
    assert first[0] == "started" and second[:3] == ("skipped", thread_id, None)
    kinds = [e["kind"] for e in rt.history(thread_id)["events"]]
    assert "cron-skipped" in kinds
    rt.run(thread_id)  # the run ends
    tick_once(rt)
    assert [r["run"] for r in rt.history(thread_id)["runs"]] == [1, 2]
    assert [t[0] for t in ticks(sql, cron.cron_id)] == ["started", "skipped", "started"]


def test_missed_ticks_run_the_latest_once(rt: Runtime, sql: psycopg.Connection[Any]) -> None:
    # every minute, so the next tick cannot fall due while this one is taken
    cron = rt.crons.create("chat", EVERY_MINUTE, HELLO)
    overdue(sql, cron.cron_id, "10 hours")  # as if no worker was up for ten hours
    assert rt.crons.tick(["chat"], "t1") == 1
    [(outcome, thread_id, _, missed)] = ticks(sql, cron.cron_id)
    assert outcome == "started" and 600 <= missed < schedule.MISSED_COUNTED
    [event] = [e for e in rt.history(thread_id)["events"] if e["kind"] == "cron-missed"]
    assert "only the latest" in event["reason"] and event["evidence"]["missed"] == missed


def test_deleted_and_disabled_crons_start_nothing(
    rt: Runtime, sql: psycopg.Connection[Any]
) -> None:
    gone = rt.crons.create("chat", EVERY_MINUTE, HELLO)
    off = rt.crons.create("chat", EVERY_MINUTE, HELLO, enabled=False)
    for cron in (gone, off):
        overdue(sql, cron.cron_id)
    assert rt.crons.delete(gone.cron_id) and not rt.crons.delete(gone.cron_id)
    assert rt.crons.tick(["chat"], "t1") == 0
    assert ticks(sql, gone.cron_id) == ticks(sql, off.cron_id) == []
    again = rt.crons.update(off.cron_id, {"enabled": True})
    assert again is not None and again.enabled
    assert rt.crons.tick(["chat"], "t1") == 0  # enabled again: from its next tick on


def test_refusals_write_nothing(rt: Runtime, sql: psycopg.Connection[Any]) -> None:
    with pytest.raises(BadInput, match="not a cron expression"):
        rt.crons.create("chat", "every two seconds", HELLO)
    with pytest.raises(BadInput):
        rt.crons.create("nothing", EVERY_MINUTE, HELLO)
    with pytest.raises(UnknownThread):
        rt.crons.create("chat", EVERY_MINUTE, HELLO, thread_id="no-such-thread")
    assert sql.execute("SELECT count(*) FROM waystone.crons").fetchone() == (0,)


def test_input_and_metadata_are_stored_redacted(rt: Runtime, sql: psycopg.Connection[Any]) -> None:
    said = {"messages": [{"role": "user", "content": "write to ana@example.com"}]}
    cron = rt.crons.create("chat", EVERY_MINUTE, said, metadata={"owner": "bob@example.com"})
    raw = sql.execute(
        "SELECT input::text, metadata::text FROM waystone.crons WHERE cron_id = %s",
        (cron.cron_id,),
    ).fetchone()
    assert raw is not None and "@example.com" not in raw[0] + raw[1]
    assert [c.cron_id for c in rt.crons.search(metadata=cron.metadata)] == [cron.cron_id]
