"""Worker processes for the acceptance tests: real ``waystone worker`` subprocesses."""

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

from tests.conftest import ROOT, Cli


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


@pytest.fixture
def workers(cli: Cli, tmp_path: Path) -> Iterator[Workers]:
    pool = Workers(cli, tmp_path)
    yield pool
    pool.stop_all()


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
