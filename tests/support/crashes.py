"""The crash points, as ``waystone debug crash-points --json`` lists them (what a user of
``WAYSTONE_CRASH_AT`` sees), for the acceptance tests that loop over them."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from tests.conftest import ROOT


def crash_points() -> list[dict[str, Any]]:
    listed = subprocess.run(
        [sys.executable, "-m", "waystone", "debug", "crash-points", "--json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=300,  # a bound for a command that never answers, however loaded the machine
    )
    points: list[dict[str, Any]] = json.loads(listed.stdout)["crash_points"]
    return points
