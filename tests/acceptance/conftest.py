"""The acceptance tests' fixtures: real ``waystone worker`` subprocesses, a real ``waystone
api`` as the module's ``api_setup`` says and its official client, the web server over the
test's runtime, and the command knowing the trip agents."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from tests.conftest import ROOT, Cli
from tests.support.api import ApiSetup, api_server
from tests.support.safe_graphs import GRAPHS as TRIP_GRAPHS
from tests.support.served import TOKEN as SERVED_TOKEN
from tests.support.served import Served
from waystone import Runtime


class Workers:
    def __init__(self, cli: Cli, tmp: Path) -> None:
        self.cli, self.tmp, self.procs = cli, tmp, []  # type: list[subprocess.Popen[str]]

    def spawn(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        n = len(self.procs)
        out = (self.tmp / f"worker{n}.out").open("w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "waystone", "worker", "--json", *args],
            env={**self.cli.env, **(env or {})},
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
        out.close()
        self.procs.append(proc)
        return proc

    def output(self, proc: subprocess.Popen[str]) -> str:
        return (self.tmp / f"worker{self.procs.index(proc)}.out").read_text()

    def summary(self, proc: subprocess.Popen[str]) -> dict[str, Any]:
        last = self.output(proc).strip().splitlines()[-1]
        data: dict[str, Any] = json.loads(last)
        return data

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
            proc.wait()


def stopped(proc: subprocess.Popen[str]) -> bool:
    """Whether the process is stopped (by a signal, SIGSTOP): its state in /proc is T."""
    return Path(f"/proc/{proc.pid}/stat").read_text().rpartition(")")[2].split()[0] == "T"


@pytest.fixture
def workers(cli: Cli, tmp_path: Path) -> Iterator[Workers]:
    pool = Workers(cli, tmp_path)
    yield pool
    pool.stop_all()


@pytest.fixture
def api(cli: Cli, workers: Workers, api_setup: ApiSetup) -> Iterator[str]:
    """A real ``waystone api`` as the module's ``api_setup`` says, with its worker: its URL."""
    if api_setup.worker is not None:
        workers.spawn(*api_setup.worker, env=api_setup.env)
    with api_server({**cli.env, **api_setup.env, "WAYSTONE_API_TOKEN": api_setup.token}) as url:
        yield url


@pytest.fixture
def lg(api: str, api_setup: ApiSetup) -> Iterator[SyncLangGraphClient]:
    """The official LangGraph client of ``api``, with its token."""
    with get_sync_client(url=api, api_key=api_setup.token) as client:
        yield client


@pytest.fixture
def served(runtime: Runtime) -> Iterator[Served]:
    """The web server over the test's runtime, taking ``tests.support.served.TOKEN``."""
    server = Served(runtime, SERVED_TOKEN)
    yield server
    server.close()


@pytest.fixture
def trip_cli(cli: Cli) -> Cli:
    """The command, knowing the trip agents of ``tests.support.safe_graphs``."""
    cli.env["WAYSTONE_GRAPHS"] = TRIP_GRAPHS
    return cli


@pytest.fixture
def new_directory(tmp_path: Path, database_url: str) -> Iterator[tuple[Path, dict[str, str]]]:
    """A directory of its own, and a user's environment, for the pages' commands and
    blocks: no WAYSTONE_HOME (the default, ./.waystone, holds the vault key and the
    provider's file) and no provider URL."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WAYSTONE_")}
    env["WAYSTONE_DATABASE_URL"] = database_url  # in place of the embedded server
    env["WAYSTONE_ACTOR"] = "ana"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    yield tmp_path, env
