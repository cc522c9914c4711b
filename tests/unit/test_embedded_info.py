"""``waystone db status`` reads the embedded server's postmaster.pid without starting it:
a file a dead server left behind is not a running server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from waystone._db import embedded


def _pid_file(home: Path, pid: int) -> None:
    pgdata = home / "pgdata"
    pgdata.mkdir(parents=True)
    lines = [str(pid), str(pgdata), "1764600000", "5432", "/tmp/sock", "", "0 0", "ready"]
    (pgdata / "postmaster.pid").write_text("\n".join(lines) + "\n")


def test_no_pid_file_is_not_running(tmp_path: Path) -> None:
    info = embedded.server_info(tmp_path)
    assert not info.running and info.pgdata == tmp_path.resolve() / "pgdata"


def test_a_pid_file_left_by_a_dead_server_is_not_running(tmp_path: Path) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    _pid_file(tmp_path, int(gone.stdout))
    assert not embedded.server_info(tmp_path).running
    assert embedded.stop(tmp_path) is False  # nothing to stop, and no pg_ctl error


def test_a_live_pid_is_running_with_its_socket_url(tmp_path: Path) -> None:
    _pid_file(tmp_path, os.getpid())
    info = embedded.server_info(tmp_path)
    assert info.running and info.pid == os.getpid()
    assert info.url == "postgresql://postgres:@/postgres?host=/tmp/sock"
    assert info.to_dict()["started_at"] == "2025-12-01T14:40:00+00:00"
