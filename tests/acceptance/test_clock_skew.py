"""Timeouts follow the database's clock, not a worker's: a real worker process whose
system clock is an hour off (libfaketime, preloaded into that process only; Postgres and
the test keep the true time), as on a machine whose clock drifted. Assertions read the
run's row and history in Postgres."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import libfaketime
import psycopg
import pytest

from tests.acceptance.conftest import Workers
from tests.acceptance.test_workers import WEBHOOK, start_settlement
from tests.conftest import Cli, wait_until
from tests.support.rows import one, run_state
from waystone.examples.provider import ProviderProcess

LIB = Path(libfaketime.__file__).parent / "vendor" / "libfaketime" / "src"
# the wheel ships the Linux library (preloaded with LD_PRELOAD); CI and the embedded
# Postgres are Linux, and on another system these tests say why they did not run
pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="libfaketime's wheel preloads on Linux only"
)


def skewed(offset: str) -> dict[str, str]:
    """The environment of a process whose wall clock reads ``offset`` (e.g. ``+1h``) off
    the true time; its monotonic clock is left alone."""
    return {
        **WEBHOOK,
        "LD_LIBRARY_PATH": str(LIB),
        "LD_PRELOAD": str(LIB / "libfaketime.so.1"),
        "FAKETIME": offset,
        "DONT_FAKE_MONOTONIC": "1",
        "FAKETIME_NO_CACHE": "1",
    }


def waits(sql: psycopg.Connection[Any], thread_id: str) -> int:
    """How many times the run went to ``waiting``, by its history."""
    return int(
        one(
            sql,
            "SELECT count(*) FROM waystone.run_events WHERE thread_id = %s "
            "AND kind = 'transition' AND to_state = 'waiting'",
            thread_id,
        )
    )


def test_the_skew_is_real(cli: Cli) -> None:
    """The preload does move a process's clock (else the tests below prove nothing)."""
    probe = [sys.executable, "-c", "import time; print(time.time())"]
    ahead = subprocess.run(probe, env={**cli.env, **skewed("+1h")}, capture_output=True, text=True)
    true = subprocess.run(probe, env=cli.env, capture_output=True, text=True)
    assert ahead.returncode == 0 and true.returncode == 0, ahead.stderr
    assert 3500 < float(ahead.stdout) - float(true.stdout) < 3700


def test_a_deadline_is_set_on_the_database_clock(
    cli: Cli, provider: ProviderProcess, workers: Workers, sql: psycopg.Connection[Any]
) -> None:
    """A worker an hour ahead still gives a one-hour wait one hour, by Postgres' clock."""
    thread_id = start_settlement(cli, "settled")  # waits up to 3600 s for the webhook
    ahead = workers.spawn("--until-idle", env=skewed("+1h"))
    assert ahead.wait(timeout=60) == 0, workers.output(ahead)
    assert run_state(sql, thread_id) == "waiting"
    waited = one(
        sql,
        "SELECT extract(epoch FROM r.wake_at - e.created_at) FROM waystone.runs r "
        "JOIN waystone.run_events e ON e.thread_id = r.thread_id "
        "AND e.kind = 'transition' AND e.to_state = 'waiting' WHERE r.thread_id = %s",
        thread_id,
    )
    assert 3599 < float(waited) < 3601


def test_a_worker_behind_the_database_times_out_once(
    cli: Cli, provider: ProviderProcess, workers: Workers, sql: psycopg.Connection[Any]
) -> None:
    """A worker an hour behind waits once and times out once: it neither takes the due
    run up again and again (its own clock saying "not yet") nor sets a deadline already past
    by Postgres' clock."""
    thread_id = start_settlement(cli, "settled_briefly")  # 1 s, then the run fails
    behind = workers.spawn("--poll-seconds", "1", env=skewed("-1h"))
    wait_until(
        lambda: run_state(sql, thread_id) == "failed",
        "the wait timed out",
    )
    behind.send_signal(signal.SIGTERM)
    assert behind.wait(timeout=30) == 0, workers.output(behind)
    reason = one(sql, "SELECT reason FROM waystone.runs WHERE thread_id = %s", thread_id)
    assert reason == "no 'refund.settled' signal within 1s for refund"
    assert waits(sql, thread_id) == 1
    assert len(provider.ledger()["refunds"]) == 1
