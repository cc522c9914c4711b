"""How fast does a waiting run wake up? Signal -> next step, approve -> next step.

An idle worker (a separate process, polling only every 60 s) waits on LISTEN/NOTIFY.
For each sample, the script records a signal (or an approval) and measures, on the
database's own clock, the time from the signal's row to the run's next transition to
``running``. Usage::

    python scripts/bench_wake.py [--samples 20] [--json]

Uses WAYSTONE_DATABASE_URL, or the embedded Postgres under WAYSTONE_HOME.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from waystone import Runtime, Settings
from waystone.cli.agents import default_agents
from waystone.examples.provider import ProviderProcess

AGENTS = "waystone.examples.settlement:settled"
SMALL = {"order_id": "b", "amount": "40.00", "currency": "EUR", "email": "b@example.com"}
BIG = {**SMALL, "amount": "120.00"}


def wait_state(rt: Runtime, thread_id: str, state: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while rt._parts.registry.get(thread_id).state != state:
        if time.monotonic() > deadline:
            raise SystemExit(f"{thread_id} did not reach {state}")
        time.sleep(0.01)


def latency(rt: Runtime, thread_id: str, signal_name: str) -> float:
    """Seconds from the newest signal of the run to its next claim, on the DB clock."""
    with rt._parts.db.connection() as conn:
        row = conn.execute(
            "SELECT extract(epoch FROM (SELECT min(e.created_at) FROM waystone.run_events e "
            "  WHERE e.thread_id = s.thread_id AND e.kind = 'transition' "
            "  AND e.to_state = 'running' AND e.created_at > s.created_at) - s.created_at) AS d "
            "FROM waystone.signals s WHERE s.thread_id = %s AND s.name = %s "
            "ORDER BY s.id DESC LIMIT 1",
            (thread_id, signal_name),
        ).fetchone()
    assert row is not None and row["d"] is not None
    return float(row["d"])


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 2),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 2),
        "max_ms": round(ordered[-1] * 1000, 2),
    }


def measure(samples: int) -> dict[str, Any]:
    """Signal -> next step and approve -> next step, ``samples`` times each."""
    os.environ["WAYSTONE_AGENTS"] = AGENTS
    with (
        tempfile.TemporaryDirectory() as tmp,
        ProviderProcess.start(Path(tmp) / "p.sqlite3") as provider,
    ):
        os.environ["WAYSTONE_PAYMENTS_URL"] = provider.url
        with Runtime(Settings.from_env(), default_agents) as rt:
            env = {**os.environ, "WAYSTONE_DATABASE_URL": rt._parts.db.url}
            worker = subprocess.Popen(
                [sys.executable, "-m", "waystone", "worker", "--poll-seconds", "60"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                signals, approvals = [], []
                for i in range(samples):
                    run = rt.start("settled", {**SMALL, "order_id": f"s{i}-{time.time_ns()}"})
                    wait_state(rt, run.thread_id, "waiting")
                    time.sleep(0.05)  # let the worker go idle on LISTEN
                    rt.signal(run.thread_id, "refund.settled", {"n": i})
                    wait_state(rt, run.thread_id, "done")
                    signals.append(latency(rt, run.thread_id, "refund.settled"))
                for i in range(samples):
                    run = rt.start("refund", {**BIG, "order_id": f"a{i}-{time.time_ns()}"})
                    wait_state(rt, run.thread_id, "waiting")
                    time.sleep(0.05)
                    rt.approve(run.thread_id, by="bench")
                    wait_state(rt, run.thread_id, "done")
                    approvals.append(latency(rt, run.thread_id, "approval"))
            finally:
                worker.send_signal(signal.SIGTERM)
                worker.wait(timeout=60)
    return {
        "samples": samples,
        "signal_to_next_step": summary(signals),
        "approve_to_next_step": summary(approvals),
        "worker_poll_seconds": 60,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.samples)
    if args.json:
        print(json.dumps(result))
    else:
        for name in ("signal_to_next_step", "approve_to_next_step"):
            s = result[name]
            print(
                f"{name:24} median {s['median_ms']:8.2f} ms   p95 {s['p95_ms']:8.2f} ms   "
                f"max {s['max_ms']:8.2f} ms"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
