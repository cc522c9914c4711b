"""A one-action run's time on this checkout against another, side by side.

    python scripts/bench_ab.py --base /path/to/other/checkout [--rounds 6] [--runs 300]
                               [--actions 1]

Each round times ``--runs`` runs (``Runtime.invoke`` of the ``--actions``-action agent of
``bench_storage``, after 30 warm-up runs) in a new process of each checkout in turn, on
two databases of one embedded Postgres, and prints both medians and their difference. The
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

from waystone.checkpointing import embedded

ROOT = Path(__file__).resolve().parent.parent

TIMED = """
import json, statistics, sys, time
sys.path.insert(0, "scripts")
import bench_storage
from waystone import Runtime, Settings
url, n, actions = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
spec = bench_storage.agent(actions)
with Runtime(Settings(database_url=url), agents={spec.name: spec}) as rt:
    for _ in range(30):
        rt.invoke(spec.name, {})
    times = []
    for _ in range(n):
        started = time.perf_counter()
        assert rt.invoke(spec.name, {}).state == "done"
        times.append(time.perf_counter() - started)
print(json.dumps({"median_ms": statistics.median(times) * 1000}))
"""


def _database(url: str, name: str) -> str:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    info = psycopg.conninfo.conninfo_to_dict(url)
    info["dbname"] = name
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items()})


def _time(checkout: Path, url: str, runs: int, actions: int) -> float:
    done = subprocess.run(
        [sys.executable, "-c", TIMED, url, str(runs), str(actions)],
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
    parser.add_argument("--actions", type=int, default=1, help="actions per run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ws-ab-", dir="/tmp") as home:
        url = embedded.ensure_server(Path(home))
        try:
            base_url, here_url = _database(url, "ab_base"), _database(url, "ab_here")
            diffs = []
            for n in range(1, args.rounds + 1):
                # each checkout goes first in every other round: the second of a pair
                # runs while Postgres still writes out the first one's work
                if n % 2:
                    base = _time(args.base.resolve(), base_url, args.runs, args.actions)
                    here = _time(ROOT, here_url, args.runs, args.actions)
                else:
                    here = _time(ROOT, here_url, args.runs, args.actions)
                    base = _time(args.base.resolve(), base_url, args.runs, args.actions)
                diffs.append(here - base)
                print(f"round {n}: base {base:.2f} ms, this {here:.2f} ms, {here - base:+.2f}")
            median = statistics.median(diffs)
            print(f"median difference {median:+.2f} ms per run")
        finally:
            embedded.stop(Path(home))
    return 0


if __name__ == "__main__":
    sys.exit(main())
