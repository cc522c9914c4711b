"""Crons through the official client (``langgraph-sdk``) against a real ``waystone api``,
with a real ``waystone worker`` ticking them and driving their runs: create (stateless
and on a thread), search, count, update, delete; bad schedules refused with 400 and
nothing made; a deleted cron starts no more runs."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime
from typing import Any

import httpx
import psycopg
import pytest
from langgraph_sdk.client import SyncLangGraphClient

from tests.conftest import ROOT, Cli, wait_until
from tests.support.api import ApiSetup, api_server
from tests.support.blocks import block
from tests.support.graphs import ASSIST
from tests.support.rows import cron_runs

EVERY_SECOND = "* * * * * *"
PING = {"messages": [{"role": "user", "content": "ping"}]}


@pytest.fixture
def api_setup() -> ApiSetup:
    return ApiSetup({"WAYSTONE_GRAPHS": ASSIST})


def test_crons_through_the_sdk(lg: SyncLangGraphClient, sql: psycopg.Connection[Any]) -> None:
    stateless = lg.crons.create("assist", schedule=EVERY_SECOND, input=PING, metadata={"k": 1})
    assert stateless["schedule"] == EVERY_SECOND and stateless["thread_id"] is None
    assert stateless["on_run_completed"] == "keep" and stateless["enabled"] is True
    thread_id = lg.threads.create()["thread_id"]
    on_thread = lg.crons.create_for_thread(thread_id, "assist", schedule=EVERY_SECOND, input=PING)
    assert on_thread["thread_id"] == thread_id

    found = lg.crons.search(assistant_id="assist", sort_by="created_at", sort_order="asc")
    assert [c["cron_id"] for c in found] == [stateless["cron_id"], on_thread["cron_id"]]
    assert [c["cron_id"] for c in lg.crons.search(thread_id=thread_id)] == [on_thread["cron_id"]]
    assert [c["cron_id"] for c in lg.crons.search(metadata={"k": 1})] == [stateless["cron_id"]]
    assert lg.crons.count(assistant_id="assist") == 2

    # a worker ticks them: runs on new threads, and on the cron's thread, driven to the end
    wait_until(
        lambda: sum(s == "done" for _, _, s in cron_runs(sql, stateless["cron_id"])) >= 2,
        "two of the stateless cron's runs done",
    )
    threads = {t for t, _, _ in cron_runs(sql, stateless["cron_id"])}
    assert len(threads) == len(cron_runs(sql, stateless["cron_id"]))  # a new thread each
    some = sorted(threads)[0]
    wait_until(lambda: lg.threads.get(some)["status"] == "idle", "a cron run's thread idle")
    said = [m["content"] for m in lg.threads.get_state(some)["values"]["messages"]]
    assert said == ["ping", "echo ping"]
    wait_until(lambda: len(lg.runs.list(thread_id)) >= 2, "two runs on the cron's thread")

    off = lg.crons.update(stateless["cron_id"], enabled=False, metadata={"k": 2})
    assert off["enabled"] is False and off["metadata"] == {"k": 2}
    assert lg.crons.search(enabled=False)[0]["cron_id"] == stateless["cron_id"]

    lg.crons.delete(stateless["cron_id"])
    lg.crons.delete(on_thread["cron_id"])
    assert lg.crons.search() == []
    with pytest.raises(httpx.HTTPStatusError) as gone:
        lg.crons.delete(on_thread["cron_id"])
    assert gone.value.response.status_code == 404
    before = {c: cron_runs(sql, c) for c in (stateless["cron_id"], on_thread["cron_id"])}
    # a cron made after the delete ticks three times: the tickers went on meanwhile
    clock = lg.crons.create("assist", schedule=EVERY_SECOND, input=PING)
    wait_until(lambda: len(cron_runs(sql, clock["cron_id"])) >= 3, "three later ticks")
    assert {c: cron_runs(sql, c) for c in before} == before  # the deleted ones started none
    lg.crons.delete(clock["cron_id"])


@pytest.mark.parametrize(
    ("change", "status", "says"),
    [
        ({"schedule": "every two seconds"}, 400, "is not a cron expression"),
        ({"schedule": "61 * * * *"}, 400, "is not a cron expression"),
        ({"schedule": None}, 400, "a cron needs a schedule"),
        ({"timezone": "Mars/Olympus_Mons"}, 400, "IANA"),
        ({"assistant_id": "nothing-by-that-name"}, 404, "not found"),
        ({"webhook": "https://example.com/hook"}, 422, "webhook"),
        ({"on_run_completed": "delete"}, 422, "keeps every run's thread"),
        ({"multitask_strategy": "enqueue"}, 422, "skipped"),
    ],
)
def test_bad_crons_are_refused_and_nothing_is_made(
    lg: SyncLangGraphClient,
    sql: psycopg.Connection[Any],
    change: dict[str, Any],
    status: int,
    says: str,
) -> None:
    body = {"assistant_id": "assist", "schedule": EVERY_SECOND, "input": PING, **change}
    with pytest.raises(httpx.HTTPStatusError) as refused:
        lg.http.post("/runs/crons", json=body)
    assert refused.value.response.status_code == status
    assert says in refused.value.response.json()["detail"]
    assert sql.execute("SELECT count(*) FROM waystone.crons").fetchone() == (0,)


def test_a_cron_on_a_thread_that_does_not_exist_is_refused(
    lg: SyncLangGraphClient, sql: psycopg.Connection[Any]
) -> None:
    with pytest.raises(httpx.HTTPStatusError) as refused:
        lg.crons.create_for_thread("no-such-thread", "assist", schedule=EVERY_SECOND, input=PING)
    assert refused.value.response.status_code == 404
    made = lg.crons.create("assist", schedule="0 9 * * *", input=PING)
    with pytest.raises(httpx.HTTPStatusError) as bad_update:
        lg.crons.update(made["cron_id"], schedule="whenever")
    assert bad_update.value.response.status_code == 400
    assert lg.crons.search()[0]["schedule"] == "0 9 * * *"
    assert sql.execute("SELECT count(*) FROM waystone.crons").fetchone() == (1,)


def test_the_docs_cron_example_runs_as_written(cli: Cli) -> None:
    """The crons example of docs/api.md, against a server with the README's graph and
    token."""
    example = block("docs/api.md", "Crons", "py").code
    graphs = "support=waystone.examples.support:builder"
    env = {**cli.env, "WAYSTONE_GRAPHS": graphs, "WAYSTONE_API_TOKEN": "s3cret"}
    with api_server(env) as url:
        code = example.replace("http://127.0.0.1:2024", url)
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
        )
    assert done.returncode == 0, done.stderr
    next_run, same = done.stdout.splitlines()
    assert datetime.fromisoformat(next_run).weekday() < 5 and same == "True"
