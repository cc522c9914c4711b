"""What a ``waystone ... --json`` command printed."""

from __future__ import annotations

import json
import subprocess
from typing import Any


def ok(done: subprocess.CompletedProcess[str]) -> Any:
    """The JSON a command printed, once it exited 0 (its stderr is the failure otherwise)."""
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
