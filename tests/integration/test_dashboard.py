"""The dashboard reads a true picture of real runs on a real Postgres (no mocks)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from rich.console import Console

from tests.conftest import REFUND_INPUT
from waystone._runs.dashboard import render, snapshot
from waystone.examples.provider import ProviderProcess
from waystone.examples.settlement import settled
from waystone.runtime import Runtime

SMALL = {**REFUND_INPUT, "amount": "40.00"}  # under the approval threshold

TITLES = (
    "Runs by state",
    "Active runs",
    "Retries by step",
    "Step times (ms)",
    "Pending approvals",
    "Runs waiting for a signal",
    "Undelivered signals",
)


def _by(rows: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    return {row[key]: row for row in rows}


def test_snapshot_of_a_done_a_waiting_and_a_queued_run(
    runtime: Runtime, provider: ProviderProcess
) -> None:
    provider.inject("refunds", "transient", times=2)
    done = runtime.start("refund", SMALL).thread_id
    assert runtime.run(done).state == "done"
    waiting = runtime.start("refund", REFUND_INPUT).thread_id
    assert runtime.run(waiting).state == "waiting"
    queued = runtime.start("refund", {**SMALL, "order_id": "1002"}).thread_id

    data = snapshot(runtime)

    assert json.loads(json.dumps(data)) == data  # JSON-serialisable as it is
    assert data["counts_by_state"] == {
        "queued": 1,
        "running": 0,
        "waiting": 1,
        "done": 1,
        "failed": 0,
        "needs-human": 0,
    }

    active = data["active_runs"]
    assert [(r["thread_id"], r["state"]) for r in active] == [
        (waiting, "waiting"),
        (queued, "queued"),
    ]
    assert all(r["agent"] == "refund" and r["age_s"] >= 0 for r in active)
    assert active[1]["reason"] == "created"
    assert active[0]["lease_owner"] is None  # a waiting run holds no lease

    [approval] = data["pending_approvals"]
    assert approval["thread_id"] == waiting
    assert approval["tool"] == "refund"
    assert approval["reason"] == "refunds above 100.00 need approval"
    assert approval["waiting_s"] >= 0
    assert data["pending_signals"] == []
    assert data["undelivered_signals"] == []

    retries = _by(data["retries_by_step"], "step")
    assert retries["execute"]["retries"] >= 2
    assert retries["execute:refund"]["retries"] == 2  # three attempts, two beyond the first
    counts = [r["retries"] for r in data["retries_by_step"]]
    assert counts == sorted(counts, reverse=True)

    times = _by(data["step_times"], "node")
    assert list(times) == ["propose", "authorize", "execute", "confirm", "check", "verify"]
    assert {row["graph"] for row in data["step_times"]} == {"refund"}
    for node in ("propose", "authorize", "execute", "confirm", "verify"):
        row = times[node]
        assert row["n"] > 0, row
        assert isinstance(row["mean_ms"], float) and row["mean_ms"] >= 0, row
        assert isinstance(row["p95_ms"], float) and row["p95_ms"] >= 0, row
        assert row["mean_ms"] < 60_000 and row["p95_ms"] < 60_000, row  # milliseconds, sane
    # done: propose twice (refund, then notify); waiting: once, before it stopped to ask
    assert times["propose"]["n"] == 3
    assert times["execute"]["n"] == 2  # the done run's refund and notification
    assert times["confirm"]["n"] == 2
    assert times["verify"]["n"] == 2


def test_waiting_for_a_signal_undelivered_signals_and_the_limit(
    runtime: Runtime, provider: ProviderProcess
) -> None:
    runtime.register(settled())
    waits = runtime.start("settled", {**SMALL, "order_id": "2001"}).thread_id
    assert runtime.run(waits).state == "waiting"
    early = runtime.start("refund", SMALL).thread_id
    runtime.signal(early, "early.bird", {"n": 1})
    later = runtime.start("refund", {**SMALL, "order_id": "1003"}).thread_id
    runtime.signal(later, "late.bird")

    data = snapshot(runtime)

    [pending] = data["pending_signals"]
    assert pending["thread_id"] == waits
    assert pending["agent"] == "settled"
    assert pending["waiting_for"] == "refund.settled"
    assert pending["wake_at"] is not None and pending["wake_at"].endswith("+00:00")
    assert data["pending_approvals"] == []
    assert [(s["thread_id"], s["name"]) for s in data["undelivered_signals"]] == [
        (early, "early.bird"),
        (later, "late.bird"),
    ]

    first = snapshot(runtime, limit=1)
    assert [r["thread_id"] for r in first["active_runs"]] == [waits]
    assert len(first["undelivered_signals"]) == 1
    assert sum(first["counts_by_state"].values()) == 3  # counts are never cut by the limit
    with pytest.raises(ValueError):
        snapshot(runtime, limit=0)


def test_pending_approvals_leave_out_decided_ones(
    runtime: Runtime, provider: ProviderProcess
) -> None:
    """An approved run that no worker has resumed yet is shown as approved among the active
    runs, never as awaiting a decision; a rejected one has ended."""
    approved, rejected, undecided = (
        runtime.start("refund", {**REFUND_INPUT, "order_id": order}).thread_id
        for order in ("1001", "1002", "1003")
    )
    for thread_id in (approved, rejected, undecided):
        assert runtime.run(thread_id).state == "waiting"
    runtime.approve(approved, by="ana")
    runtime.reject(rejected, by="bob", reason="never paid")

    data = snapshot(runtime)

    assert [a["thread_id"] for a in data["pending_approvals"]] == [undecided]
    active = _by(data["active_runs"], "thread_id")
    assert list(active) == [approved, undecided]
    assert active[approved]["reason"].startswith("approved by ana; waiting for a worker")
    assert active[undecided]["reason"].startswith("waiting for approval of refund")


def test_render_prints_every_view_with_its_title(
    runtime: Runtime, provider: ProviderProcess
) -> None:
    waiting = runtime.start("refund", REFUND_INPUT).thread_id
    runtime.run(waiting)
    out = io.StringIO()

    render(snapshot(runtime), Console(file=out, width=120))

    text = out.getvalue()
    for title in TITLES:
        assert title in text
    assert waiting in text
    assert "refunds above 100.00 need approval" in text


def test_render_shows_reasons_as_text_not_markup() -> None:
    data: dict[str, Any] = {
        "counts_by_state": {"queued": 1},
        "active_runs": [
            {
                "thread_id": "t-1",
                "agent": "refund",
                "state": "queued",
                "age_s": 3725.0,
                "reason": "error: [bold]not markup[/bold]",
                "lease_owner": None,
            }
        ],
        "retries_by_step": [],
        "step_times": [
            {"graph": "refund", "node": "propose", "n": 1, "mean_ms": 2.0, "p95_ms": 2.0}
        ],
        "pending_approvals": [],
        "pending_signals": [],
        "pending_interrupts": [],
        "undelivered_signals": [],
    }
    out = io.StringIO()

    render(data, Console(file=out, width=120))

    text = out.getvalue()
    assert "[bold]not markup[/bold]" in text
    assert "1h 02m" in text
