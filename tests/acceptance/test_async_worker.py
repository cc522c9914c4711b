"""``waystone worker --async``: one worker process drives many runs of an async graph at
once on one event loop, on a bounded number of Postgres connections."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from tests.acceptance.conftest import Workers
from tests.conftest import wait_until
from tests.support.async_graphs import gather_graph
from waystone import Runtime, Settings
from waystone.examples.provider import ProviderProcess

RUNS = 20
POOL = 3  # WAYSTONE_POOL_MAX_SIZE: of the sync pool, and of the loop's async pool


def gathering(
    runs: int, database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """``runs`` queued runs of the gather graph, and the environment of its workers."""
    env = {
        "WAYSTONE_GRAPHS": "gather=tests.support.async_graphs:gather_graph",
        "GATHER_RUNS": str(runs),
        "GATHER_DIR": str(tmp_path),
        "WAYSTONE_POOL_MAX_SIZE": str(POOL),
        "WAYSTONE_DATABASE_URL": make_conninfo(database_url, application_name="async-worker"),
    }
    for name in ("GATHER_RUNS", "GATHER_DIR"):
        monkeypatch.setenv(name, env[name])
    with Runtime(Settings(database_url=database_url), graphs={"gather": gather_graph}) as rt:
        for i in range(runs):
            rt.start("gather", {"name": f"r{i}"})
    return env


def test_one_async_worker_drives_twenty_runs_at_once_on_a_bounded_pool(
    database_url: str,
    provider: ProviderProcess,
    workers: Workers,
    sql: psycopg.Connection[Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = gathering(RUNS, database_url, tmp_path, monkeypatch)

    worker = workers.spawn("--async", "--concurrency", "200", "--until-idle", env=env)
    wait_until(lambda: (tmp_path / "all-in").exists(), "every run waits in its node at once")
    held = sql.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'async-worker'"
    ).fetchone()
    (tmp_path / "go").write_text("go")
    assert worker.wait(timeout=120) == 0, workers.output(worker)

    # all twenty awaited in their node together, on the two pools and the listener
    assert held is not None and held[0] <= 2 * POOL + 1 < RUNS
    states = dict(sql.execute("SELECT state, count(*) FROM waystone.runs GROUP BY state"))
    assert states == {"done": RUNS}
    sent = provider.ledger()["notifications"]
    assert sorted(n["to"] for n in sent) == sorted(f"r{i}@example.com" for i in range(RUNS))
    assert len({n["client_ref"] for n in sent}) == RUNS  # each effect once
    assert workers.summary(worker)["driven"] == RUNS


def test_sigterm_drains_every_run_an_async_worker_holds(
    database_url: str,
    provider: ProviderProcess,
    workers: Workers,
    sql: psycopg.Connection[Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """SIGTERM while five runs await in their node: each finishes that step, gives its
    lease back, and the worker exits 0; the next worker goes on from there, each effect
    made once."""
    env = gathering(5, database_url, tmp_path, monkeypatch)
    first = workers.spawn("--async", "--concurrency", "10", env=env)
    wait_until(lambda: (tmp_path / "all-in").exists(), "every run waits in its node at once")
    first.send_signal(signal.SIGTERM)
    (tmp_path / "go").write_text("go")
    assert first.wait(timeout=60) == 0, workers.output(first)

    left = sql.execute("SELECT state, lease_owner FROM waystone.runs").fetchall()
    assert left == [("running", None)] * 5  # drained: leases given back, not ended
    assert provider.ledger()["notifications"] == []  # the step after the node never began
    second = workers.spawn("--async", "--until-idle", env=env)
    assert second.wait(timeout=60) == 0, workers.output(second)
    states = dict(sql.execute("SELECT state, count(*) FROM waystone.runs GROUP BY state"))
    assert states == {"done": 5}
    sent = provider.ledger()["notifications"]
    assert sorted(n["to"] for n in sent) == sorted(f"r{i}@example.com" for i in range(5))
