"""LangGraph's own graph tests, run on Postgres with Waystone's saver in place of the stock
one: the tests that hold pydantic models, dataclasses and ``AgentAction``/``AgentFinish`` in
state, on their ``postgres*`` checkpointer fixtures, with no Waystone option set.

    python scripts/langgraph_graph_suite.py [--stock] [--sealed] [--url ADMIN_URL]
        [--files test_pydantic.py ...] [-- PYTEST_ARGS...]

The tests come from the sdist of the installed ``langgraph`` (downloaded once into the
cache of ``stock_saver_suite.py``, whose virtualenv, Postgres and URL handling this reuses);
the virtualenv adds what the graph tests import (sqlite saver, redis client, syrupy).
``--stock`` runs them on the stock savers, for a baseline; ``--sealed`` with encryption at
rest on. Needs the network the first time, so it is run on demand, never in CI.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import stock_saver_suite as stock

GRAPH_TESTS = (
    "test_pydantic.py",
    "test_state.py",
    "test_large_cases.py",
    "test_large_cases_async.py",
)
NEEDS = (
    *stock.NEEDS,
    "langgraph-checkpoint-sqlite",
    "aiosqlite",
    "redis",
    "syrupy",
    "pytest-repeat",
)

# Put in place of the stock imports of the tests' checkpointer fixtures.
SWAP = """from waystone import AsyncWaystoneSaver as _Async, WaystoneSaver as _Sync


class PostgresSaver(_Sync):
    def __init__(self, conn, pipe=None, **kwargs):
        super().__init__(conn, pipe=pipe, **kwargs)


class AsyncPostgresSaver(_Async):
    def __init__(self, conn, pipe=None, **kwargs):
        super().__init__(conn, **kwargs)
"""
STOCK_IMPORTS = (
    "from langgraph.checkpoint.postgres import PostgresSaver\n",
    "from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver\n",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a superuser URL (default: a fresh embedded Postgres)")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "waystone-stock")
    parser.add_argument("--stock", action="store_true", help="run the stock savers (baseline)")
    parser.add_argument("--sealed", action="store_true", help="encryption at rest on")
    parser.add_argument("--files", nargs="+", default=list(GRAPH_TESTS))
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    args = parser.parse_args()

    args.cache.mkdir(parents=True, exist_ok=True)
    sdist = stock._download(args.cache, "langgraph")
    python = stock._venv(args.cache, NEEDS, "venv-graph")
    work = Path(tempfile.mkdtemp(prefix="langgraph-graph-"))
    tests = stock._extract(sdist, work)
    home = work / "home"
    home.mkdir()
    url = args.url or stock._embedded(work / "pg")
    try:
        _point_at(tests, stock._uri(url), swap=not args.stock)
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(stock.ROOT), str(work)]),
            "WAYSTONE_HOME": str(home),
            "NO_DOCKER": "false",
        }
        stock.sealed(env, args.sealed)
        command = stock.pytest_command(
            python, "-k", "postgres", *[str(tests / n) for n in args.files]
        )
        command += args.pytest_args
        kind = "stock" if args.stock else "waystone"
        print(f"{kind} savers, graph tests of {sdist.name}", flush=True)
        return subprocess.run(command, cwd=work, env=env, check=False).returncode
    finally:
        if not args.url:
            from waystone._db import embedded

            embedded.stop(work / "pg")


def _point_at(tests: Path, uri: str, *, swap: bool) -> None:
    fixtures = tests / "conftest_checkpointer.py"
    text = fixtures.read_text()
    text = re.sub(r'DEFAULT_POSTGRES_URI = ".*"', f"DEFAULT_POSTGRES_URI = {uri!r}", text)
    if swap:
        for line in STOCK_IMPORTS:
            if line not in text:
                raise SystemExit(f"the tests' fixtures no longer import {line.strip()!r}")
            text = text.replace(line, "")
        text = SWAP + text
    fixtures.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
