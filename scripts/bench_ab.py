"""A one-action run's time on this checkout against another, side by side.

    python scripts/bench_ab.py --base /path/to/other/checkout [--rounds 6] [--runs 300]
                               [--actions 1] [--marginal]

Each round times ``--runs`` runs (``Runtime.invoke`` of the ``--actions``-action agent of
``bench_storage``, after 30 warm-up runs) in a new process of each checkout in turn, on
two databases of one embedded Postgres, and prints both medians and their difference.
With ``--marginal``, each timed run is a pair, a one-action run and an ``--actions``-action
one (5 by default), and the figure is what a step costs once a run's own costs are paid:
their difference over the difference of their checkpoints (``bench.py``'s marginal). The
checkouts alternate and take turns going first (the second of a pair runs slower, while
Postgres writes out the first one's work), so a drift of the machine's speed falls on
both; quote the median of the differences over an even number of rounds, not one round.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg

from waystone._db import embedded

ROOT = Path(__file__).resolve().parent.parent

TIMED = """
import dataclasses, json, statistics, sys, time
sys.path.insert(0, "scripts")
import bench_storage
from waystone import Runtime, Settings
from waystone._db.database import Database
from waystone._db.migrations import migrate
import psycopg
url, n, actions, marginal = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
spec = bench_storage.agent(actions)
one = dataclasses.replace(bench_storage.agent(1), name="note-one")
COUNT = "SELECT count(*) FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = ''"

def timed(conn, name):
    started = time.perf_counter()
    done = rt.invoke(name, {})
    elapsed = time.perf_counter() - started
    assert done.state == "done"
    return elapsed, (conn.execute(COUNT, (done.thread_id,)).fetchone()[0] if marginal else 0)

agents = {spec.name: spec, one.name: one}
db = Database.open(Settings(database_url=url))  # a new database: both checkouts migrate so
migrate(db)
db.close()
with Runtime(Settings(database_url=url), agents=agents) as rt, psycopg.connect(url) as conn:
    for _ in range(30):
        rt.invoke(spec.name, {})
    times = []
    for _ in range(n):
        if marginal:
            (t1, s1), (tn, sn) = timed(conn, one.name), timed(conn, spec.name)
            times.append((tn - t1) / (sn - s1))
        else:
            times.append(timed(conn, spec.name)[0])
print(json.dumps({"median_ms": statistics.median(times) * 1000}))
"""


def _database(url: str, name: str) -> str:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    info = psycopg.conninfo.conninfo_to_dict(url)
    info["dbname"] = name
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items()})


def _time(checkout: Path, url: str, runs: int, actions: int, marginal: bool) -> float:
    done = subprocess.run(
        [sys.executable, "-c", TIMED, url, str(runs), str(actions), "1" if marginal else "0"],
        cwd=checkout,
        env={**os.environ, "PYTHONPATH": str(checkout)},
        capture_output=True,
        text=True,
        check=True,
    )
    return float(json.loads(done.stdout.strip().splitlines()[-1])["median_ms"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the other checkout")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--actions", type=int, help="actions per run (1; 5 with --marginal)")
    parser.add_argument(
        "--marginal", action="store_true", help="time a step once a run's costs are paid"
    )
    args = parser.parse_args()
    actions = args.actions or (5 if args.marginal else 1)
    if args.marginal and actions < 2:
        parser.error("--marginal compares a one-action run with one of --actions >= 2")
    unit = "per step" if args.marginal else "per run"
    with tempfile.TemporaryDirectory(prefix="ws-ab-", dir="/tmp") as home:
        url = embedded.ensure_server(Path(home))
        try:
            base_url, here_url = _database(url, "ab_base"), _database(url, "ab_here")
            diffs = []
            for n in range(1, args.rounds + 1):
                # each checkout goes first in every other round: the second of a pair
                # runs while Postgres still writes out the first one's work
                if n % 2:
                    base = _time(args.base.resolve(), base_url, args.runs, actions, args.marginal)
                    here = _time(ROOT, here_url, args.runs, actions, args.marginal)
                else:
                    here = _time(ROOT, here_url, args.runs, actions, args.marginal)
                    base = _time(args.base.resolve(), base_url, args.runs, actions, args.marginal)
                diffs.append(here - base)
                print(f"round {n}: base {base:.3f} ms, this {here:.3f} ms, {here - base:+.3f}")
            median = statistics.median(diffs)
            print(f"median difference {median:+.3f} ms {unit}")
        finally:
            embedded.stop(Path(home))
    return 0


if __name__ == "__main__":
    sys.exit(main())
