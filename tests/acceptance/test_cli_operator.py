"""What an operator meets at the command line, each in a real subprocess: agents found in
the current directory by the installed command, ``--version``, readable ``--help``,
``serve --json``, a killed worker's lease in ``status``, the thread id in worker logs, and
``db status|stop`` for the embedded Postgres a directory's commands leave running."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import psycopg
import pytest

from tests.conftest import REFUND_INPUT, ROOT, Cli, wait_until
from tests.support.api import piped
from tests.support.outputs import ok
from waystone._db import embedded

AGENT_MODULE = """
import dataclasses

from waystone.examples import refund


def build():
    return dataclasses.replace(refund.build(), name="mine")
"""

# What pip writes for the `waystone` console script: its directory, not the current one,
# starts sys.path.
CONSOLE_SCRIPT = """
import sys
from waystone.cli import main
sys.exit(main())
"""


def test_installed_command_finds_an_agents_module_in_the_current_directory(
    cli: Cli, tmp_path: Path
) -> None:
    bin_dir, project = tmp_path / "bin", tmp_path / "project"
    bin_dir.mkdir()
    project.mkdir()
    (bin_dir / "waystone").write_text(CONSOLE_SCRIPT)
    (project / "mymodule.py").write_text(AGENT_MODULE)
    result = subprocess.run(
        [sys.executable, str(bin_dir / "waystone"), "start", "--agent", "mine"]
        + ["--input", json.dumps(REFUND_INPUT), "--json"],
        env={**cli.env, "WAYSTONE_AGENTS": "mymodule:build"},
        cwd=project,
        capture_output=True,
        text=True,
        timeout=90,
    )
    started = ok(result)
    assert (started["agent"], started["state"]) == ("mine", "queued")


def test_version_prints_the_installed_version() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "waystone", "--version"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"waystone {metadata.version('waystone')}"


def test_help_labels_flags_and_values_the_classic_way() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "waystone", "approve", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        env={**os.environ, "COLUMNS": "100"},
    )
    assert result.returncode == 0, result.stderr
    assert "<bool>" not in result.stdout and "<str>" not in result.stdout
    lines = {line.split()[1]: line for line in result.stdout.splitlines() if "│ --" in line}
    assert "TEXT" in lines["--by"]
    assert "TEXT" not in lines["--run"] and "BOOL" not in lines["--run"].upper()
    assert "THREAD_ID" in result.stdout


def test_serve_json_prints_the_url_it_listens_on(cli: Cli) -> None:
    proc = piped([sys.executable, "-m", "waystone", "serve", "--port", "0", "--json"], cli.env)
    try:
        assert proc.stdout is not None
        announced = json.loads(proc.stdout.readline())
        assert announced["url"] == f"http://127.0.0.1:{announced['port']}"
        assert announced["port"] > 0
        with urllib.request.urlopen(announced["url"] + "/api/runs", timeout=30) as reply:
            assert reply.status == 200
            assert "runs" in json.loads(reply.read())
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert proc.returncode == 0


def test_status_of_a_run_whose_worker_was_killed_shows_the_lease_expiry(
    cli: Cli, database_url: str
) -> None:
    thread_id = ok(
        cli("start", "--agent", "refund", "--input", json.dumps(REFUND_INPUT), "--json")
    )["thread_id"]
    killed = cli(
        "run",
        thread_id,
        env={"WAYSTONE_CRASH_AT": "propose:after-model", "WAYSTONE_LEASE_SECONDS": "600"},
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    held = ok(cli("status", thread_id, "--json"))
    assert held["state"] == "running"
    lease = held["lease"]
    assert lease["owner"] and lease["expired"] is False
    assert 0 < lease["expires_in_s"] <= 600
    assert "expires in" in cli("status", thread_id).stdout
    with psycopg.connect(database_url, autocommit=True) as conn:
        # the lease runs out, as it does for a killed worker, on the database's clock
        conn.execute(
            "UPDATE waystone.runs SET lease_expires_at = clock_timestamp() - interval '42 s' "
            "WHERE thread_id = %s",
            (thread_id,),
        )
    expired = ok(cli("status", thread_id, "--json"))["lease"]
    assert expired["expired"] is True and expired["expires_in_s"] <= -42
    shown = cli("status", thread_id).stdout
    assert re.search(r"held by \S+, expired \d+s ago", shown), shown
    assert f"`waystone run {thread_id}`" in shown


def test_worker_log_lines_carry_the_thread_id(cli: Cli) -> None:
    thread_id = ok(
        cli("start", "--agent", "refund", "--input", json.dumps(REFUND_INPUT), "--json")
    )["thread_id"]
    result = cli("worker", "--until-idle", "--poll-seconds", "0.2")
    assert result.returncode == 0, result.stderr
    driving = [line for line in result.stderr.splitlines() if "driving run" in line]
    assert driving and all(f"thread_id={thread_id}" in line for line in driving), result.stderr
    assert ok(cli("status", thread_id, "--json"))["state"] == "waiting"


@pytest.fixture
def home() -> Iterator[Path]:
    """A WAYSTONE_HOME of its own (short: the server's unix socket lives under it)."""
    path = Path("/tmp") / f"ws-db-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    try:
        yield path
    finally:
        embedded.stop(path)
        subprocess.run(["rm", "-rf", str(path)], check=False)


def test_db_status_and_stop_the_embedded_server_a_directory_left_running(home: Path) -> None:
    env = {**os.environ, "WAYSTONE_HOME": str(home), "WAYSTONE_DATABASE_URL": ""}

    def waystone(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "waystone", *args],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )

    assert ok(waystone("db", "status", "--json"))["running"] is False
    ok(waystone("list", "--json"))  # starts the embedded server, and leaves it running
    running = ok(waystone("db", "status", "--json"))
    assert running["running"] is True and running["pid"] > 0
    assert running["pgdata"] == str(home.resolve() / "pgdata")
    with psycopg.connect(running["url"]) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    assert f"pid {running['pid']}" in waystone("db", "status").stdout
    stopped = ok(waystone("db", "stop", "--json"))
    assert stopped == {"stopped": True, "pid": running["pid"], "pgdata": running["pgdata"]}
    wait_until(lambda: not _alive(running["pid"]), "the postmaster to exit")
    assert ok(waystone("db", "status", "--json"))["running"] is False
    again = waystone("db", "stop")
    assert again.returncode == 0 and "no server was running" in again.stdout


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
