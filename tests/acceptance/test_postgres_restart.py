"""Workers survive Postgres going away for 5 s mid-run: they back off, reconnect and carry
on; every run reaches done and no effect happens twice. Runs on its own embedded server,
so stopping it disturbs no other test."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.conftest import REFUND_INPUT, ROOT, wait_until
from waystone import Runtime, Settings
from waystone._db import embedded
from waystone.cli.agents import default_agents
from waystone.examples.provider import ProviderProcess

OUTAGE_S = 5.0  # the length of the outage under test, not a wait for something to happen


@pytest.fixture
def own_server() -> Iterator[tuple[Path, str]]:
    home = Path("/tmp") / f"ws-rs-{uuid.uuid4().hex[:8]}"
    home.mkdir()
    admin = embedded.ensure_server(home)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("CREATE DATABASE restart_test")
    info = psycopg.conninfo.conninfo_to_dict(admin)
    info["dbname"] = "restart_test"
    try:
        yield home, psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items()})
    finally:
        embedded.stop(home)
        subprocess.run(["rm", "-rf", str(home)], check=False)


def _states(url: str) -> dict[str, int]:
    try:
        with psycopg.connect(url, connect_timeout=2) as conn:
            rows = conn.execute("SELECT state, count(*) FROM waystone.runs GROUP BY 1").fetchall()
    except psycopg.OperationalError:
        return {}
    return {state: n for state, n in rows}


def test_workers_survive_a_postgres_restart(
    own_server: tuple[Path, str], provider: ProviderProcess, tmp_path: Path
) -> None:
    home, url = own_server
    with Runtime(Settings(database_url=url), default_agents, migrate=True) as rt:  # a new db
        for i in range(10):
            rt.start("refund", {**REFUND_INPUT, "amount": "40.00", "order_id": f"r{i}"})
    provider.inject("refunds", "slow", times=10, delay_s=0.5)
    env = {
        **__import__("os").environ,
        "WAYSTONE_DATABASE_URL": url,
        "WAYSTONE_PAYMENTS_URL": provider.url,
    }
    logs = [(tmp_path / f"w{i}.log").open("w") for i in range(2)]
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "waystone",
                "worker",
                "--json",
                "--poll-seconds",
                "1",
                "--lease-seconds",
                "3",
            ],
            env=env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        for log in logs
    ]
    try:
        wait_until(lambda: _states(url).get("done", 0) >= 1, "the first run done", 60)
        assert _states(url).get("done", 0) < 10, "too late: every run finished before the outage"
        embedded.stop(home)
        time.sleep(OUTAGE_S)
        embedded.ensure_server(home)
        wait_until(lambda: _states(url) == {"done": 10}, "every run done after the restart", 180)
        for w in workers:
            w.send_signal(signal.SIGTERM)
        assert [w.wait(timeout=60) for w in workers] == [0, 0]
        summaries = [
            json.loads((tmp_path / f"w{i}.log").read_text().splitlines()[-1]) for i in range(2)
        ]
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait()
        for log in logs:
            log.close()
    ledger = provider.ledger()
    assert sorted(r["order_id"] for r in ledger["refunds"]) == sorted(f"r{i}" for i in range(10))
    assert len(ledger["notifications"]) == 10
    assert sum(s["driven"] for s in summaries) >= 10
