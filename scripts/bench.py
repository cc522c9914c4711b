"""Waystone against stock LangGraph, DBOS and a raw Postgres commit, on one Postgres.

Per step (median and p95 over repeated runs of the same 5-step work):
  raw        one INSERT + commit per step
  langgraph  a 5-node StateGraph with the stock PostgresSaver, durability="sync"
  langgraph_in_memory / langgraph_no_checkpointer  the same graph without Postgres: what
             LangGraph's own loop costs per step
  waystone   Waystone's full runtime (ledger, fencing, run registry, events, redaction):
             start a run and drive it to done (`Runtime.invoke`: created and claimed in one
             transaction): one action through propose -> authorize -> execute -> confirm
             -> check -> verify with a tool that does nothing
  waystone_start_run  the same run started, then driven (`start`, then `run`: a queued
             run, then its claim, as a worker or another process would take it)
  waystone_marginal  what one more action adds per node step (a 5-action run less a
             1-action run, over the node steps between them): a step once the costs of a
             run (start, claim, settle) are paid
  waystone_graph  the stock row's 5-node graph itself, given to Waystone
             (`Runtime(graphs=...)`, `rt.invoke`): a user's graph run durably
  dbos       a 5-step DBOS Transact workflow (optional: `pip install -e '.[bench]'`;
             skipped with a message when absent)
A step is one checkpointed node step, counted alike for both graphs (checkpoints less the
input one and the one after __start__): 5 for the stock graph, 6 for Waystone's. The rows
are measured in interleaved rounds (each row once per round), so a machine whose speed
drifts during the run moves every row alike; `--blocks` measures row after row instead.
Then: runs per second with 1, 2 and 4 worker processes; bytes stored per action at 10 and
200 actions; time from a killed worker's lease expiry to the run's next step; time from
`approve` to the next step with an idle worker. `--rows` measures only the named per-step
rows (and stock LangGraph, the base of the ratios), and nothing after the table.

    python scripts/bench.py [--quick] [--json] [--blocks] [--workers 1,2,4] [--rows a,b]

Uses WAYSTONE_DATABASE_URL, or the embedded Postgres under WAYSTONE_HOME.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TypedDict

import psycopg
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.graph import END, START, StateGraph

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_storage  # noqa: E402
import bench_wake  # noqa: E402

from waystone import Runtime, Settings  # noqa: E402
from waystone._db.database import resolve_url  # noqa: E402

STEPS = 5
GRAPH = "five_nodes"  # the name the stock row's graph is given to Waystone under


def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 3),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 3),
        "n": len(ordered),
    }


Sample = Callable[[], float]  # runs the work once: seconds per step


def per_step(fn: Callable[[], int]) -> Sample:
    """A sample of ``fn``, which runs the work once and returns how many steps it ran."""

    def sample() -> float:
        start = time.perf_counter()
        steps = fn()
        return (time.perf_counter() - start) / steps

    return sample


def interleaved(samples: dict[str, Sample], repeats: int) -> dict[str, list[float]]:
    """Every sample once per round, ``repeats`` rounds (after a warm-up round): a machine
    that speeds up or slows down during the run moves every row alike, so the ratios hold.
    Each round runs the rows in a new order (seeded: the same orders every run), since a
    row runs faster after a row that warmed the same code (the second of two Waystone rows
    in a fixed order measured 3-6% less than the first)."""
    for sample in samples.values():
        sample()
    out: dict[str, list[float]] = {name: [] for name in samples}
    order = list(samples)
    shuffle = random.Random(6).shuffle
    for _ in range(repeats):
        shuffle(order)
        for name in order:
            out[name].append(samples[name]())
    return out


def in_blocks(samples: dict[str, Sample], repeats: int) -> dict[str, list[float]]:
    """Each row's runs back to back, one row after another (``--blocks``): how the rows
    were measured before they were interleaved, open to the machine's drift between rows."""
    out: dict[str, list[float]] = {}
    for name, sample in samples.items():
        sample()
        out[name] = [sample() for _ in range(repeats)]
    return out


def raw(stack: ExitStack, url: str) -> Sample:
    conn = stack.enter_context(psycopg.connect(url, autocommit=True))
    conn.execute("CREATE TABLE IF NOT EXISTS bench_raw (id bigserial, run text, step int)")

    def run() -> int:
        rid = uuid.uuid4().hex
        for i in range(STEPS):
            conn.execute("INSERT INTO bench_raw (run, step) VALUES (%s, %s)", (rid, i))
        return STEPS

    return per_step(run)


def node_steps(conn: psycopg.Connection[Any], thread_id: str) -> int:
    """Node steps of a finished run, counted alike for every graph: its checkpoints less
    the input one and the one after ``__start__`` (stock: 7 checkpoints, 5 node steps)."""
    row = conn.execute(
        "SELECT count(*) - 2 AS n FROM checkpoints WHERE thread_id = %s", (thread_id,)
    ).fetchone()
    assert row is not None
    n = row["n"] if isinstance(row, dict) else row[0]
    return int(n)


class S(TypedDict):
    n: int


def five_nodes() -> StateGraph[Any]:
    graph: StateGraph[Any] = StateGraph(S)
    names = [f"n{i}" for i in range(STEPS)]
    for name in names:
        graph.add_node(name, lambda s: {"n": s["n"] + 1})
    graph.add_edge(START, names[0])
    for a, b in zip(names, names[1:], strict=False):
        graph.add_edge(a, b)
    graph.add_edge(names[-1], END)
    return graph


def langgraph_in_process(checkpointed: bool) -> Sample:
    """The same graph with no Postgres: LangGraph's own cost of a step, with the in-memory
    saver (``durability="sync"``) or with no checkpointer at all."""
    app = five_nodes().compile(checkpointer=InMemorySaver() if checkpointed else None)
    extra: dict[str, Any] = {"durability": "sync"} if checkpointed else {}

    def run() -> int:
        app.invoke({"n": 0}, {"configurable": {"thread_id": uuid.uuid4().hex}}, **extra)
        return STEPS

    return per_step(run)


def langgraph(stack: ExitStack, url: str) -> Sample:
    saver = stack.enter_context(PostgresSaver.from_conn_string(url))
    saver.setup()
    app = five_nodes().compile(checkpointer=saver)

    def run() -> int:
        config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}
        app.invoke({"n": 0}, config, durability="sync")
        return STEPS

    with psycopg.connect(url) as conn:  # the same count as Waystone's
        thread_id = uuid.uuid4().hex
        app.invoke({"n": 0}, {"configurable": {"thread_id": thread_id}}, durability="sync")
        assert node_steps(conn, thread_id) == STEPS
    return per_step(run)


def _drive(rt: Runtime, agent: str, invoke: bool = True) -> tuple[float, int]:
    """Start a run and drive it to done, ``invoke`` (created and claimed in one
    transaction) or ``start`` then ``run``: (seconds, node steps)."""
    start = time.perf_counter()
    done = rt.invoke(agent, {}) if invoke else rt.run(rt.start(agent, {}).thread_id)
    elapsed = time.perf_counter() - start
    assert done.state == "done", done.reason
    thread_id = done.thread_id
    with rt._parts.db.connection() as conn:
        return elapsed, node_steps(conn, thread_id)


def waystone(rt: Runtime, invoke: bool = True) -> Sample:
    spec = bench_storage.agent(1)
    rt.register(spec)

    def sample() -> float:
        elapsed, steps = _drive(rt, spec.name, invoke)
        return elapsed / steps

    return sample


def waystone_marginal(rt: Runtime, actions: int = 5) -> Sample:
    """Seconds per node step that an action adds to a run: (a run of ``actions`` actions
    less a run of one) / (the node steps between them). What a step costs once the costs
    of a run (start, claim, settle) are paid."""
    one, many = bench_storage.agent(1), bench_storage.agent(actions)
    rt.register(one)
    rt.register(many)

    def sample() -> float:
        (t1, s1), (tn, sn) = _drive(rt, one.name), _drive(rt, many.name)
        return (tn - t1) / (sn - s1)

    return sample


def waystone_graph(rt: Runtime) -> Sample:
    """The stock row's graph run by Waystone: a thread per run, as the stock row's."""

    def run() -> int:
        done = rt.invoke(GRAPH, {"n": 0})
        assert done.state == "done", done.reason
        return STEPS

    with rt._parts.db.connection() as conn:  # the same count as the stock graph's
        thread_id = rt.invoke(GRAPH, {"n": 0}).thread_id
        assert node_steps(conn, thread_id) == STEPS
    return per_step(run)


def dbos(stack: ExitStack, url: str) -> Sample | str:
    try:
        from dbos import DBOS, DBOSConfig  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return "skipped: dbos is not installed (pip install -e '.[bench]')"
    config: Any = DBOSConfig(name="waystone-bench", system_database_url=url)
    DBOS(config=config)
    stack.callback(DBOS.destroy)

    @DBOS.step()  # type: ignore[misc,unused-ignore]
    def step(i: int) -> int:
        return i + 1

    @DBOS.workflow()  # type: ignore[misc,unused-ignore]
    def flow() -> int:
        n = 0
        for _ in range(STEPS):
            n = step(n)
        return n

    try:
        DBOS.launch()
        flow()
    except Exception as exc:  # an optional peer: report, do not fail the whole bench
        return f"skipped: dbos failed: {type(exc).__name__}: {exc}"
    return per_step(lambda: (flow(), STEPS)[1])


ROWS = (
    "raw",
    "langgraph",
    "langgraph_in_memory",
    "langgraph_no_checkpointer",
    "waystone",
    "waystone_start_run",
    "waystone_marginal",
    "waystone_graph",
    "dbos",
)


def per_step_costs(
    url: str, repeats: int, blocks: bool = False, only: set[str] | None = None
) -> dict[str, Any]:
    """The rows of the per-step table (all, or ``only`` those and stock LangGraph's),
    measured in interleaved rounds on one Postgres (with ``blocks``, row after row)."""
    wanted = set(ROWS) if only is None else only | {"langgraph"}
    peer: Sample | str | None = None
    with ExitStack() as stack:
        makers: dict[str, Callable[[], Sample]] = {
            "raw": lambda: raw(stack, url),
            "langgraph": lambda: langgraph(stack, url),
            "langgraph_in_memory": lambda: langgraph_in_process(True),
            "langgraph_no_checkpointer": lambda: langgraph_in_process(False),
        }
        samples = {name: make() for name, make in makers.items() if name in wanted}
        rt = stack.enter_context(
            Runtime(Settings(database_url=url), graphs={GRAPH: five_nodes()}, migrate=True)
        )
        on_runtime: dict[str, Callable[[], Sample]] = {
            "waystone": lambda: waystone(rt),
            "waystone_start_run": lambda: waystone(rt, invoke=False),
            "waystone_marginal": lambda: waystone_marginal(rt),
            "waystone_graph": lambda: waystone_graph(rt),
        }
        samples |= {name: make() for name, make in on_runtime.items() if name in wanted}
        if "dbos" in wanted:
            peer = dbos(stack, url)
            if not isinstance(peer, str):
                samples["dbos"] = peer
        measured = (in_blocks if blocks else interleaved)(samples, repeats)
    rows: dict[str, Any] = {name: stats(values) for name, values in measured.items()}
    if isinstance(peer, str):
        rows["dbos"] = peer
    base = rows["langgraph"]["median_ms"]
    for value in rows.values():
        if isinstance(value, dict):
            value["ratio_to_langgraph"] = round(value["median_ms"] / base, 3)
    return rows


def throughput(url: str, workers: int, runs: int) -> float:
    """Runs per second with ``workers`` worker processes, all of them started and idle on
    LISTEN before the runs arrive (in one transaction): from the runs' creation to the last
    one done, on the database's clock."""
    spec = bench_storage.agent(1)
    env = {
        **os.environ,
        "WAYSTONE_DATABASE_URL": url,
        "WAYSTONE_AGENTS": "bench_storage:one_action",
        "PYTHONPATH": str(Path(__file__).resolve().parent),
    }
    with Runtime(Settings(database_url=url), agents={spec.name: spec}, migrate=True) as rt:
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "waystone", "worker", "--poll-seconds", "60"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for _ in range(workers)
        ]
        try:
            wait_for(lambda: listeners(rt) >= workers, "every worker to listen")
            with rt._parts.db.transaction() as conn:
                ids = [
                    rt._parts.registry.create(
                        thread_id=f"{spec.name}-{uuid.uuid4().hex[:12]}",
                        agent=spec.name,
                        goal="throughput",
                        input={},
                        conn=conn,
                    )[0].thread_id
                    for _ in range(runs)
                ]
            wait_for(lambda: finished(rt, ids) == runs, f"{runs} runs to be done", 600)
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGTERM)
            for proc in procs:
                proc.wait(timeout=60)
        with rt._parts.db.connection() as conn:
            row = conn.execute(
                "SELECT extract(epoch FROM max(e.created_at) - min(r.created_at)) AS s "
                "FROM waystone.runs r JOIN waystone.run_events e USING (thread_id) "
                "WHERE r.thread_id = ANY(%s) AND e.kind = 'transition' AND e.to_state = 'done'",
                (ids,),
            ).fetchone()
    assert row is not None
    return round(runs / float(row["s"]), 2)


def listeners(rt: Runtime) -> int:
    with rt._parts.db.connection() as conn:
        row = conn.execute(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE query ILIKE 'LISTEN %'"
        ).fetchone()
    return int(row["n"]) if row else 0


def finished(rt: Runtime, ids: list[str]) -> int:
    with rt._parts.db.connection() as conn:
        row = conn.execute(
            "SELECT count(*) AS n FROM waystone.runs WHERE thread_id = ANY(%s) AND state = 'done'",
            (ids,),
        ).fetchone()
    return int(row["n"]) if row else 0


def wait_for(check: Callable[[], bool], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.02)


def takeover_latency(url: str) -> float:
    """Seconds from a killed worker's lease expiry to the run's next step elsewhere."""
    env = {
        **os.environ,
        "WAYSTONE_DATABASE_URL": url,
        "WAYSTONE_AGENTS": "bench_storage:one_action",
        "PYTHONPATH": str(Path(__file__).resolve().parent),
    }
    spec = bench_storage.agent(1)
    with Runtime(Settings(database_url=url), agents={spec.name: spec}, migrate=True) as rt:
        thread_id = rt.start(spec.name, {}).thread_id
        victim = subprocess.Popen(
            [sys.executable, "-m", "waystone", "worker", "--lease-seconds", "2"],
            env={**env, "WAYSTONE_CRASH_AT": "execute:after-intent"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        victim.wait(timeout=120)  # it kills itself inside execute, holding the lease
        expired = rt._parts.registry.get(thread_id).lease_expires_at
        assert expired is not None
        rescuer = subprocess.Popen(
            [sys.executable, "-m", "waystone", "worker", "--poll-seconds", "0.2"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 120
            while rt._parts.registry.get(thread_id).state != "done":
                if time.monotonic() > deadline:
                    raise SystemExit("the run was not taken over")
                time.sleep(0.05)
        finally:
            rescuer.send_signal(signal.SIGTERM)
            rescuer.wait(timeout=60)
        with rt._parts.db.connection() as conn:
            takeover = conn.execute(
                "SELECT created_at FROM waystone.run_events WHERE thread_id = %s "
                "AND kind = 'lease-takeover'",
                (thread_id,),
            ).fetchone()
    assert takeover is not None
    return round((takeover["created_at"] - expired).total_seconds(), 3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats: under a minute")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--workers", default="1,2,4", help="worker process counts for the throughput figure"
    )
    parser.add_argument(
        "--blocks", action="store_true", help="each row's runs back to back, not interleaved"
    )
    parser.add_argument(
        "--rows",
        help=f"only these per-step rows, comma-separated, and nothing else ({', '.join(ROWS)})",
    )
    args = parser.parse_args()
    only = None if args.rows is None else {r.strip() for r in args.rows.split(",") if r.strip()}
    if only is not None and (not only or not only <= set(ROWS)):
        unknown = ", ".join(sorted(only - set(ROWS))) or "none given"
        parser.error(f"--rows: unknown row ({unknown}); choose from {', '.join(ROWS)}")
    repeats = 15 if args.quick else 100
    url = resolve_url(Settings.from_env())
    report: dict[str, Any] = {
        "steps_per_run": STEPS,
        "repeats": repeats,
        "machine": {"cores": os.cpu_count()},
    }
    with psycopg.connect(url) as conn:
        report["postgres"] = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
    report["per_step_method"] = "blocks" if args.blocks else "interleaved"
    report["per_step"] = per_step_costs(url, repeats, args.blocks, only)
    if only is not None:
        print(json.dumps(report, indent=None if args.json else 2))
        return 0
    runs = 80 if args.quick else 200
    counts = [int(w) for w in args.workers.split(",")]
    report["throughput_runs_per_s"] = {str(w): throughput(url, w, runs) for w in counts}
    os.environ["WAYSTONE_DATABASE_URL"] = url
    sizes = [bench_storage.measure(n) for n in (10, 200)]
    report["storage_bytes_per_action"] = {str(s["actions"]): s["bytes_per_action"] for s in sizes}
    report["lease_expiry_to_next_step_s"] = takeover_latency(url)
    wake = bench_wake.measure(samples=5 if args.quick else 20)
    report["approve_to_next_step_ms"] = wake["approve_to_next_step"]
    report["signal_to_next_step_ms"] = wake["signal_to_next_step"]
    if args.json:
        print(json.dumps(report))
    else:
        print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
