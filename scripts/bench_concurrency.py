"""One ``waystone worker --async`` process driving many runs at once, each node awaiting.

``--runs`` runs (200) of a graph of ``--steps`` nodes (3), each node ``await
asyncio.sleep(--sleep)`` (1 s), are queued, then one worker process (``--concurrency``
= runs, ``--until-idle``) drives them all. Prints the steps per second it reached, by the
database's clock from its first claim to its last run's end, against the ideal (every
await in parallel: runs x steps / (steps x sleep)); the peak number of Postgres
connections the worker held (``pg_stat_activity``, by its ``application_name``); and the
worker's peak RSS. Goals: at least 0.8 x the ideal, at most 20 connections. Usage::

    python scripts/bench_concurrency.py [--runs 200] [--steps 3] [--sleep 1] [--json]

Uses WAYSTONE_DATABASE_URL, or the embedded Postgres under WAYSTONE_HOME.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import operator
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Annotated, Any, TypedDict

import psycopg
from langgraph.graph import END, START, StateGraph
from psycopg.conninfo import make_conninfo

from waystone import Runtime, Settings

HERE = Path(__file__).resolve().parent
GRAPH = "sleepy"


class Slept(TypedDict, total=False):
    steps: Annotated[list[int], operator.add]


def sleepy_graph() -> StateGraph[Any]:
    """``BENCH_STEPS`` nodes in a row, each awaiting ``BENCH_SLEEP`` seconds (a model)."""
    steps = int(os.environ.get("BENCH_STEPS", "3"))
    pause = float(os.environ.get("BENCH_SLEEP", "1"))

    def node(i: int) -> Any:
        async def step(state: Slept) -> dict[str, Any]:
            await asyncio.sleep(pause)
            return {"steps": [i]}

        return step

    builder: StateGraph[Any] = StateGraph(Slept)
    previous = START
    for i in range(steps):
        builder.add_node(f"step{i}", node(i))
        builder.add_edge(previous, f"step{i}")
        previous = f"step{i}"
    builder.add_edge(previous, END)
    return builder


class Sampler:
    """The worker's Postgres connections and RSS, sampled every 50 ms: the peaks."""

    def __init__(self, url: str, application: str, pid: int) -> None:
        self.url, self.application, self.pid = url, application, pid
        self.connections = 0
        self.rss_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self._stop.is_set():
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                    (self.application,),
                ).fetchone()
                self.connections = max(self.connections, row[0] if row else 0)
                self.rss_kb = max(self.rss_kb, _rss_kb(self.pid))
                self._stop.wait(0.05)


def _rss_kb(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):  # the peak resident set
            return int(line.split()[1])
    return 0


def measure(runs: int, steps: int, pause: float) -> dict[str, Any]:
    os.environ.update(BENCH_STEPS=str(steps), BENCH_SLEEP=str(pause))
    with Runtime(Settings.from_env(), graphs={GRAPH: sleepy_graph}) as rt:
        prefix = f"bench-{uuid.uuid4().hex[:6]}"
        for i in range(runs):
            rt.start(GRAPH, {"steps": []}, thread_id=f"{prefix}-{i}")
        application = f"waystone-bench-{os.getpid()}"
        env = {
            **os.environ,
            "WAYSTONE_DATABASE_URL": make_conninfo(rt._parts.db.url, application_name=application),
            "WAYSTONE_GRAPHS": f"{GRAPH}=bench_concurrency:sleepy_graph",
            "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        }
        command = [sys.executable, "-m", "waystone", "worker", "--async", "--until-idle"]
        command += ["--concurrency", str(runs), "--json"]
        with tempfile.TemporaryFile("w+") as logged:
            worker = subprocess.Popen(
                command, env=env, stdout=subprocess.PIPE, stderr=logged, text=True
            )
            with Sampler(rt._parts.db.url, application, worker.pid) as sampled:
                out, _ = worker.communicate(timeout=600)
            if worker.returncode != 0:
                logged.seek(0)
                raise SystemExit(f"the worker exited {worker.returncode}: {logged.read()[-4000:]}")
        with rt._parts.db.connection() as conn:
            row = conn.execute(
                "SELECT count(*) FILTER (WHERE to_state = 'done') AS done, extract(epoch FROM "
                "max(created_at) FILTER (WHERE to_state = 'done') - "
                "min(created_at) FILTER (WHERE to_state = 'running')) AS elapsed "
                "FROM waystone.run_events WHERE kind = 'transition' AND thread_id LIKE %s",
                (f"{prefix}-%",),
            ).fetchone()
    assert row is not None
    done = int(row["done"])
    elapsed = float(row["elapsed"])
    ideal_s = steps * pause
    return {
        "runs": runs,
        "steps_per_run": steps,
        "sleep_s": pause,
        "done": done,
        "elapsed_s": round(elapsed, 3),
        "steps_per_s": round(runs * steps / elapsed, 1),
        "ideal_steps_per_s": round(runs * steps / ideal_s, 1),
        "of_ideal": round(ideal_s / elapsed, 3),
        "peak_connections": sampled.connections,
        "peak_rss_mb": round(sampled.rss_kb / 1024, 1),
        "worker": json.loads(out.strip().splitlines()[-1]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--sleep", type=float, default=1.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    started = time.monotonic()
    result = measure(args.runs, args.steps, args.sleep)
    result["wall_s"] = round(time.monotonic() - started, 1)
    if args.json:
        print(json.dumps(result))
        return
    print(
        f"{result['runs']} runs x {result['steps_per_run']} steps of {result['sleep_s']:g} s, "
        f"one worker (--async --concurrency {result['runs']}):\n"
        f"  {result['steps_per_s']} steps/s, ideal {result['ideal_steps_per_s']} "
        f"({result['of_ideal']:.2f} x ideal; goal >= 0.8), {result['elapsed_s']} s "
        f"from first claim to last end, {result['done']} done\n"
        f"  peak Postgres connections: {result['peak_connections']} (goal <= 20)\n"
        f"  worker peak RSS: {result['peak_rss_mb']} MB"
    )


if __name__ == "__main__":
    main()
