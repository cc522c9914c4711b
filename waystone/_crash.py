"""Crash points: a test seam that makes the process SIGKILL itself at a named line.

``WAYSTONE_CRASH_AT=<point>`` arms a point at its first hit; ``<point>@<tool>`` arms it only
where the action's tool is ``<tool>`` (for the points that know the tool). It is inert
when unset. ``WAYSTONE_FREEZE_AT`` names a point the same way and makes the process stop
itself there with SIGSTOP instead (a worker frozen by a GC pause or a VM migration),
once: it goes on where it was when it gets SIGCONT. Every point is declared here so
``waystone debug crash-points`` lists them all and the acceptance suite loops over them.
"""

from __future__ import annotations

import os
import signal
import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class CrashPoint:
    name: str
    where: str
    per_tool: bool


_POINTS = [
    CrashPoint(
        "propose:after-model", "after the model's answer, before propose's checkpoint", True
    ),
    CrashPoint(
        "authorize:after-decision",
        "after the decision (policy's or a person's) is read, before the checkpoint",
        True,
    ),
    CrashPoint(
        "execute:after-intent", "after the effect's intent is committed, before the call", True
    ),
    CrashPoint(
        "effect:before-send",
        "after the last lease check, right before the provider request leaves the process",
        True,
    ),
    CrashPoint(
        "execute:after-transient",
        "after a transient failure and its attempt are recorded, before the retry",
        True,
    ),
    CrashPoint(
        "execute:after-apply",
        "after the provider applied the effect, before the receipt is recorded",
        True,
    ),
    CrashPoint(
        "execute:after-receipt",
        "after the receipt is recorded (to commit with the checkpoint, when the tool can "
        "reconcile it; at once, when it cannot), before the checkpoint",
        True,
    ),
    CrashPoint(
        "confirm:after-lookup", "after the confirmation read-back, before it is recorded", True
    ),
    CrashPoint(
        "confirm:after-record",
        "after the confirmation is recorded (to commit with the checkpoint), before it",
        True,
    ),
    CrashPoint("verify:after-checks", "after verify's checks, before verify's checkpoint", True),
    CrashPoint(
        "run:after-checkpoint",
        "after the graph's last invoke, before the run's state transition (a run that "
        "ends has made it with its last checkpoint; a run that waits has not)",
        False,
    ),
    CrashPoint(
        "webhook:before-send",
        "after a webhook's delivery is claimed and its attempt counted, before the request",
        False,
    ),
    CrashPoint(
        "webhook:after-send",
        "after a webhook's request was answered (or failed), before the outcome is recorded",
        False,
    ),
]
CRASH_POINTS: dict[str, CrashPoint] = {p.name: p for p in _POINTS}


_frozen: set[str] = set()  # the freeze points this process has stopped at


def crash_point(name: str, tool: str | None = None) -> None:
    """Kill this process with SIGKILL if ``WAYSTONE_CRASH_AT`` names this point (stop it
    with SIGSTOP, once, if ``WAYSTONE_FREEZE_AT`` does)."""
    if name not in CRASH_POINTS:  # a typo here would make a crash test silently pass
        raise KeyError(f"undeclared crash point {name!r}")
    crash, freeze = os.environ.get("WAYSTONE_CRASH_AT"), os.environ.get("WAYSTONE_FREEZE_AT")
    if crash and _names(crash, name, tool):
        os.kill(os.getpid(), signal.SIGKILL)
    if freeze and _names(freeze, name, tool) and freeze not in _frozen:
        _frozen.add(freeze)
        # to this thread: it stops on the way back from the call, before its next line (a
        # stop sent to the process may be taken by another thread while this one goes on)
        signal.pthread_kill(threading.get_ident(), signal.SIGSTOP)


def _names(armed: str, name: str, tool: str | None) -> bool:
    return armed == name or (tool is not None and armed == f"{name}@{tool}")
