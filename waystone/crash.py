"""Crash points: a test seam that makes the process SIGKILL itself at a named line.

``WAYSTONE_CRASH_AT=<point>`` arms one point; it is inert when unset. Every point is
declared here so ``waystone debug crash-points`` can list them all and the acceptance
suite can loop over them.
"""

from __future__ import annotations

import os
import signal

CRASH_POINTS: dict[str, str] = {
    "propose:after-model": "after the model's answer, before propose's checkpoint",
    "authorize:after-decision": "after the approval decision is read, before the checkpoint",
    "execute:after-intent": "after the effect's intent is committed, before the call",
    "execute:after-apply": "after the provider applied the effect, before the receipt is stored",
    "execute:after-receipt": "after the receipt is recorded, before execute's checkpoint",
    "confirm:after-lookup": "after the confirmation lookup, before it is recorded",
    "confirm:after-record": "after the confirmation is recorded, before confirm's checkpoint",
    "verify:after-checks": "after verify's checks, before verify's checkpoint",
    "run:after-checkpoint": "after the last checkpoint, before the run's state transition",
}


def crash_point(name: str) -> None:
    """Kill this process with SIGKILL if ``WAYSTONE_CRASH_AT`` names this point."""
    if name not in CRASH_POINTS:  # a typo here would make a crash test silently pass
        raise KeyError(f"undeclared crash point {name!r}")
    if os.environ.get("WAYSTONE_CRASH_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)
