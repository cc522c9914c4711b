"""One run per tick, however many are up: a cron every 2 seconds (a stateless one, a new
thread each tick) and one every 3 seconds on a thread, with three ``waystone worker``
processes ticking them and two ``waystone api`` servers serving them, for a minute.
Asserted from the runs tables and the start keys: every scheduled tick was run once or
declared missed (the missed-tick policy), none twice."""

from __future__ import annotations

from contextlib import ExitStack
from datetime import datetime
from typing import Any

import psycopg
import pytest
from croniter import croniter
from langgraph_sdk import get_sync_client

from tests.acceptance.conftest import Workers
from tests.conftest import Cli, wait_until
from tests.support.api import TOKEN, api_server
from tests.support.graphs import ASSIST, assist_graph
from tests.support.rows import cron_runs
from waystone import Runtime, Settings

PING = {"messages": [{"role": "user", "content": "ping"}]}
SCHEDULES = {"stateless": "* * * * * */2", "thread": "* * * * * */3"}
SPAN_S = 60  # how long, by the ticks' own times, the crons run


def tick_rows(sql: psycopg.Connection[Any], cron_id: str) -> list[dict[str, Any]]:
    with sql.cursor(row_factory=psycopg.rows.dict_row) as cur:
        return cur.execute(
            "SELECT * FROM waystone.cron_ticks WHERE cron_id = %s ORDER BY tick_at", (cron_id,)
        ).fetchall()


def scheduled(schedule: str, first: datetime, last: datetime) -> list[datetime]:
    """Every tick the schedule gives from ``first`` to ``last``, both included."""
    it, found = croniter(schedule, first), [first]
    while (t := it.get_next(datetime)) <= last:
        found.append(t)
    return found


def spanned(sql: psycopg.Connection[Any], cron_ids: list[str]) -> bool:
    for cron_id in cron_ids:
        rows = tick_rows(sql, cron_id)
        first = rows[0]["missed_from"] or rows[0]["tick_at"] if rows else None
        if first is None or (rows[-1]["tick_at"] - first).total_seconds() < SPAN_S:
            return False
    return True


@pytest.mark.timeout(420)
def test_one_run_per_tick_with_three_workers_and_two_servers(
    cli: Cli, workers: Workers, sql: psycopg.Connection[Any]
) -> None:
    env = {**cli.env, "WAYSTONE_GRAPHS": ASSIST, "WAYSTONE_API_TOKEN": TOKEN}
    for _ in range(3):
        workers.spawn(env={"WAYSTONE_GRAPHS": ASSIST})
    with ExitStack() as stack:
        urls = [stack.enter_context(api_server(env)) for _ in range(2)]
        a, b = (stack.enter_context(get_sync_client(url=u, api_key=TOKEN)) for u in urls)
        thread_id = b.threads.create()["thread_id"]
        crons = {
            "stateless": a.crons.create("assist", schedule=SCHEDULES["stateless"], input=PING),
            "thread": b.crons.create_for_thread(
                thread_id, "assist", schedule=SCHEDULES["thread"], input=PING
            ),
        }
        ids = {k: c["cron_id"] for k, c in crons.items()}
        wait_until(lambda: spanned(sql, list(ids.values())), f"{SPAN_S}s of ticks", timeout=240)
        for client, cron_id in zip((b, a), ids.values(), strict=True):
            client.crons.delete(cron_id)  # each deleted through the other server
        assert a.crons.search() == b.crons.search() == []

    for kind, cron_id in ids.items():
        rows = tick_rows(sql, cron_id)
        # every tick from the first to the last: run once, or passed over as missed
        first = rows[0]["missed_from"] or rows[0]["tick_at"]
        expected = scheduled(SCHEDULES[kind], first, rows[-1]["tick_at"])
        assert sum(1 + r["missed"] for r in rows) == len(expected), kind
        assert {r["tick_at"] for r in rows} <= set(expected)
        # each tick taken by one worker (the ticks' primary key), each started run's start
        # key once in the runs tables, and the run of each tick that started one there
        runs = cron_runs(sql, cron_id)
        keys = [k for _, k, _ in runs]
        assert len(keys) == len(set(keys)), f"{kind}: a tick ran twice"
        assert sorted(keys) == sorted(r["start_key"] for r in rows if r["outcome"] == "started")
        assert len(runs) == sum(r["outcome"] == "started" for r in rows) > 0, kind
    stateless = cron_runs(sql, ids["stateless"])
    assert len({t for t, _, _ in stateless}) == len(stateless)  # a new thread each tick
    on_thread = cron_runs(sql, ids["thread"])
    assert {t for t, _, _ in on_thread} == {thread_id}
    skipped = [r for r in tick_rows(sql, ids["thread"]) if r["outcome"] == "skipped"]
    assert all("still" in r["reason"] for r in skipped)  # its run had not ended


def test_an_async_worker_ticks_too(
    cli: Cli, workers: Workers, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    workers.spawn("--async", env={"WAYSTONE_GRAPHS": ASSIST})
    settings = Settings.from_env(database_url=database_url)
    with Runtime(settings, graphs={"assist": assist_graph}) as rt:
        cron = rt.crons.create("assist", "* * * * * *", PING)
        wait_until(
            lambda: sum(s == "done" for _, _, s in cron_runs(sql, cron.cron_id)) >= 2,
            "two of its runs driven to the end by the async worker",
        )
        assert rt.crons.delete(cron.cron_id)
