"""Approve + cancel races against one worker: no run hangs, no lease is held by a stuck drive.

Refund runs above 100.00 are driven by a ``waystone worker --concurrency 2`` process to
their approval; then each is approved and cancelled 0-400 ms later (random, seeded), many
races in flight at once, while the worker drives it. A watchdog gives every run a bound to
end (done or failed); at the end no run may be ``running`` under a live lease, and the
worker must still claim a new run. Usage::

    python scripts/race_cancel.py [--races 300] [--in-flight 8] [--seed 15] [--json]

Uses WAYSTONE_DATABASE_URL, or the embedded Postgres under WAYSTONE_HOME.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from waystone import Runtime, Settings
from waystone.cli.agents import default_agents
from waystone.errors import TransitionNotAllowed
from waystone.examples.provider import ProviderProcess

BIG = {"order_id": "r", "amount": "120.00", "currency": "EUR", "email": "ana@example.com"}
SMALL = {**BIG, "amount": "40.00"}
ENDED = ("done", "failed")


def _states(rt: Runtime, ids: list[str]) -> dict[str, str]:
    with rt._parts.db.connection() as conn:
        rows = conn.execute(
            "SELECT thread_id, state FROM waystone.runs WHERE thread_id = ANY(%s)", (ids,)
        ).fetchall()
    return {row["thread_id"]: row["state"] for row in rows}


def _until(rt: Runtime, ids: list[str], states: tuple[str, ...], bound_s: float) -> list[str]:
    """Wait until every run is in one of ``states``, at most ``bound_s``; those that are not."""
    deadline = time.monotonic() + bound_s
    while True:
        late = sorted(t for t, s in _states(rt, ids).items() if s not in states)
        if not late or time.monotonic() > deadline:
            return late
        time.sleep(0.05)


def race(
    rt: Runtime, races: int, *, seed: int = 15, in_flight: int = 8, bound_s: float = 60.0
) -> dict[str, Any]:
    """Run ``races`` approve + cancel races against the worker that drives ``rt``'s
    database, ``in_flight`` racers at once, each one run after another: start it, wait for
    its approval, approve, cancel 0-400 ms later, wait for its end. Returns what ended how,
    and what did not end within ``bound_s`` (``hung``, ``never_waited``); once one did not,
    no new race starts."""
    tag = uuid.uuid4().hex[:6]
    rand = random.Random(seed)
    delays = [rand.uniform(0.0, 0.4) for _ in range(races)]
    started = time.monotonic()
    raced: list[str] = []
    hung: list[str] = []
    never_waited: list[str] = []
    done_first: list[str] = []

    def one(n: int) -> None:
        if hung or never_waited:  # the watchdog fired: no more races
            return
        thread_id = rt.start("refund", {**BIG, "order_id": f"{tag}-{n}"}).thread_id
        raced.append(thread_id)
        if _until(rt, [thread_id], ("waiting",), bound_s):
            never_waited.append(thread_id)
            return
        rt.approve(thread_id, by="racer")
        time.sleep(delays[n])
        try:
            rt.cancel(thread_id, by="racer", reason="race")
        except TransitionNotAllowed:  # it was done first
            done_first.append(thread_id)
        hung.extend(_until(rt, [thread_id], ENDED, bound_s))

    with ThreadPoolExecutor(in_flight) as pool:
        for finished in pool.map(one, range(races)):
            del finished  # re-raises a racer's error
    with rt._parts.db.connection() as conn:
        cancelled_from = {
            row["from_state"]: row["n"]
            for row in conn.execute(
                "SELECT from_state, count(*) AS n FROM waystone.run_events "
                "WHERE kind = 'transition' AND to_state = 'failed' AND reason LIKE 'cancelled%%' "
                "AND thread_id = ANY(%s) GROUP BY from_state",
                (raced,),
            ).fetchall()
        }
        held = [
            row["thread_id"]
            for row in conn.execute(
                "SELECT thread_id FROM waystone.runs WHERE state = 'running' "
                "AND lease_expires_at > clock_timestamp()"
            ).fetchall()
        ]
    ended = Counter(_states(rt, raced).values())
    probe = rt.start("refund", {**SMALL, "order_id": f"{tag}-probe"}).thread_id
    claims_after = not _until(rt, [probe], ("done",), bound_s)
    return {
        "races": races,
        "raced": len(raced),
        "seed": seed,
        "in_flight": in_flight,
        "bound_s": bound_s,
        "ended": dict(sorted(ended.items())),
        "done_before_cancel": len(done_first),
        "cancelled_while": cancelled_from,  # running: the worker was driving it
        "never_waited": never_waited,
        "hung": hung,
        "running_with_live_lease": held,
        "worker_claims_after": claims_after,
        "wall_s": round(time.monotonic() - started, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--races", type=int, default=300)
    parser.add_argument("--in-flight", type=int, default=8)
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--bound", type=float, default=60.0, help="seconds a run may take")
    parser.add_argument("--worker-log", type=Path, help="keep the worker's output there")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as tmp,
        ProviderProcess.start(Path(tmp) / "p.sqlite3") as provider,
    ):
        os.environ["WAYSTONE_PAYMENTS_URL"] = provider.url
        with Runtime(Settings.from_env(), default_agents) as rt:
            out = args.worker_log or Path(tmp) / "worker.out"
            with out.open("w") as sink:
                worker = subprocess.Popen(
                    [sys.executable, "-m", "waystone", "worker", "--json", "--concurrency", "2"],
                    env={**os.environ, "WAYSTONE_DATABASE_URL": rt._parts.db.url},
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                )
            try:
                result = race(
                    rt, args.races, seed=args.seed, in_flight=args.in_flight, bound_s=args.bound
                )
            finally:
                worker.send_signal(signal.SIGTERM)
                try:
                    result_code = worker.wait(timeout=args.bound)
                except subprocess.TimeoutExpired:
                    worker.kill()
                    result_code = worker.wait()
            last = out.read_text().strip().splitlines()[-1:]
            summary = json.loads(last[0]) if last and last[0].startswith("{") else {}
    result["worker_exit"] = result_code
    result["worker_stuck_drives"] = summary.get("stuck")
    held = result["hung"] or result["running_with_live_lease"] or result["never_waited"]
    ok = not held and result["worker_claims_after"] and result_code == 0
    if args.json:
        print(json.dumps(result))
    else:
        for name, value in result.items():
            print(f"{name:24} {value}")
        print("ok" if ok else "FAILED: a run hung or a lease is held by a stuck drive")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
