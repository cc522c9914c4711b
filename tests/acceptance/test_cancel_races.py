"""300 approve + cancel races against one ``waystone worker --concurrency 2`` process (the
race of ``scripts/race_cancel.py``): no run hangs, no lease is held by a stuck drive, and
the worker goes on claiming and stops on SIGTERM."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.acceptance.conftest import Workers
from waystone import Runtime
from waystone.examples.provider import ProviderProcess

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import race_cancel  # noqa: E402

RACES = 300
BOUND_S = 60.0  # the watchdog: what one run may take to wait, and to end after its cancel


@pytest.mark.timeout(600)
def test_approve_cancel_races_neither_hang_nor_hold_a_lease(
    runtime: Runtime, provider: ProviderProcess, workers: Workers, sql: psycopg.Connection[Any]
) -> None:
    worker = workers.spawn("--concurrency", "2")
    result = race_cancel.race(runtime, RACES, seed=15, in_flight=8, bound_s=BOUND_S)
    assert result["never_waited"] == [], result
    assert result["hung"] == [], result
    assert result["running_with_live_lease"] == [], result
    assert set(result["ended"]) <= {"done", "failed"}, result
    assert sum(result["ended"].values()) == RACES, result
    assert result["worker_claims_after"], result
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=BOUND_S) == 0, workers.output(worker)
    assert workers.summary(worker)["stuck"] == 0
    # every refund the provider made is in its run's history, cancelled or not, and once
    recorded = dict(
        sql.execute("SELECT key, status FROM waystone.effects WHERE tool = 'refund'").fetchall()
    )
    refunds = [r["idempotency_key"] for r in provider.ledger()["refunds"]]
    assert len(refunds) == len(set(refunds))
    assert {recorded.get(k) for k in refunds} <= {"applied", "confirmed"}, [
        (k, recorded.get(k)) for k in refunds if recorded.get(k) not in ("applied", "confirmed")
    ]
