"""Starting the example provider waits for the line it prints once it listens, however
long a loaded machine takes to print it, within a bound for a start that never comes; a
provider that exits instead fails at once and says so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from waystone.examples.provider import ProviderProcess, _first_line


def test_a_provider_that_cannot_start_fails_at_once_with_its_exit_status(tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    with pytest.raises(RuntimeError, match=r"exited with status 1"):
        ProviderProcess.start(blocked / "payments.sqlite3", timeout=300)


def test_the_first_line_is_waited_for_as_long_as_it_takes() -> None:
    late = "import time; time.sleep(1); print('listening on http://127.0.0.1:1', flush=True)"
    proc = subprocess.Popen([sys.executable, "-c", late], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    try:
        assert _first_line(proc.stdout, 300) == "listening on http://127.0.0.1:1\n"
    finally:
        proc.wait()
        proc.stdout.close()


def test_a_start_that_never_comes_ends_at_the_bound() -> None:
    silent = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"], stdout=subprocess.PIPE, text=True
    )
    assert silent.stdout is not None
    try:
        assert _first_line(silent.stdout, 0.2) is None
    finally:
        silent.kill()
        silent.wait()
        silent.stdout.close()
