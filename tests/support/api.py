"""A real ``waystone api`` process for a test, on a free port."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from tests.conftest import ROOT


@contextmanager
def api_server(env: dict[str, str]) -> Iterator[str]:
    """``waystone api --port 0`` with ``env``, until the block ends: its URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "waystone", "api", "--port", "0", "--json"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else "no output"
        yield json.loads(line)["url"]
    finally:
        proc.terminate()
        proc.communicate(timeout=30)  # its pipes closed with it
