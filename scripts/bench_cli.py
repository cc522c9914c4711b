"""How long does a CLI command take, start to finish? ``--help``, ``status`` and ``list``.

Each command runs as a new process (``python -m waystone ...``, what the ``waystone`` script
runs), as a user types it: the interpreter's start, the imports, the connection, the
query, the output. One run is made to wait for its approval first, so ``status`` shows a
pending approval. Prints the median wall time of several runs of each, and whether it
meets the goal (under 0.5 s). Usage::

    python scripts/bench_cli.py [--runs 7] [--json]

Uses WAYSTONE_DATABASE_URL, or the embedded Postgres under WAYSTONE_HOME.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

GOAL_S = 0.5
INPUT = {"order_id": "1001", "amount": "120.00", "currency": "EUR", "email": "ana@example.com"}


def waiting_run() -> str:
    """A refund run waiting for its approval; its thread id."""
    from waystone import Runtime, Settings
    from waystone.cli.agents import default_agents
    from waystone.examples.provider import ProviderProcess

    with (
        tempfile.TemporaryDirectory() as tmp,
        ProviderProcess.start(Path(tmp) / "p.sqlite3") as provider,
    ):
        os.environ["WAYSTONE_PAYMENTS_URL"] = provider.url
        with Runtime(Settings.from_env(), default_agents) as rt:
            os.environ.setdefault("WAYSTONE_DATABASE_URL", rt._parts.db.url)
            status = rt.invoke("refund", INPUT)
    if status.state != "waiting":
        raise SystemExit(f"the run should wait for its approval; it is {status.state}")
    return status.thread_id


def wall_times(args: list[str], runs: int) -> list[float]:
    """Seconds per run of ``python -m waystone ARGS``, after one run to warm the caches."""
    times = []
    for i in range(runs + 1):
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "waystone", *args], capture_output=True, text=True
        )
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"waystone {' '.join(args)} exited {done.returncode}: {done.stderr}")
        if i:
            times.append(elapsed)
    return times


def measure(runs: int) -> dict[str, Any]:
    thread_id = waiting_run()
    commands = {"--help": ["--help"], "status": ["status", thread_id], "list": ["list"]}
    result: dict[str, Any] = {"goal_s": GOAL_S, "runs": runs, "commands": {}}
    for name, args in commands.items():
        times = wall_times(args, runs)
        median = statistics.median(times)
        result["commands"][name] = {
            "median_s": round(median, 3),
            "min_s": round(min(times), 3),
            "max_s": round(max(times), 3),
            "meets_goal": median < GOAL_S,
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs of each command")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    result = measure(args.runs)
    if args.json:
        print(json.dumps(result, sort_keys=True))
        return
    for name, figures in result["commands"].items():
        verdict = "meets" if figures["meets_goal"] else "misses"
        print(
            f"waystone {name:8} median {figures['median_s']:.3f} s "
            f"(min {figures['min_s']:.3f}, max {figures['max_s']:.3f}; {result['runs']} runs): "
            f"{verdict} the goal of {GOAL_S} s"
        )


if __name__ == "__main__":
    main()
