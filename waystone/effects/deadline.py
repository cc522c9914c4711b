"""The provider call under way: its deadline, and the last check before a request leaves.

The effect runner opens a :func:`call` around ``tool.apply``; opening it checks that the
lease has not ended by this process's monotonic clock, less a margin, and that the run is
still this lease's (not cancelled, not taken over): known from the intent's own fenced
write when that was under ``RECHECK_S`` ago, read from its row otherwise. :func:`before_send`
is the last thing a tool does before its request leaves the process
(``waystone.effects.http`` calls it after building the client and the request): it checks
both again, reading the row again if the thread was held up since (a pause, a slow vault),
so a worker frozen anywhere before it and woken after a cancel or a takeover sends
nothing. The request then carries its deadline (``Request-Deadline``,
seconds since the epoch): the time the attempt was counted in the ledger, by Postgres'
clock, plus the tool's timeout, which the ledger keeps. A provider that refuses a request
arriving past it also stops one frozen or held in transit after the check, which is what
lets a lookup that finds nothing be trusted (see the runner).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from waystone._crash import crash_point
from waystone.errors import LeaseLost

logger = logging.getLogger(__name__)

HEADER = "Request-Deadline"
RECHECK_S = 0.02  # held up longer than this since the run's row was read: read it again


@dataclass
class Call:
    tool: str
    deadline: float  # seconds since the epoch: when the attempt was counted, plus the timeout
    lease_ends: Callable[[], float | None]  # monotonic, less a margin (None: no lease)
    still_held: Callable[[], bool]  # the run's row: still running under this lease
    read_at: float = -float("inf")  # monotonic: the last read of the run's row
    sent: int = 0  # requests that carried the deadline

    def check(self) -> None:
        """Raise :class:`LeaseLost` once the lease may have ended, or the run was
        cancelled or taken over."""
        ends = self.lease_ends()
        now = time.monotonic()
        if ends is not None and now >= ends:
            raise LeaseLost(f"the lease may have ended; not calling {self.tool}")
        if now - self.read_at > RECHECK_S:
            if not self.still_held():
                raise LeaseLost(f"the run is no longer this lease's; not calling {self.tool}")
            self.read_at = time.monotonic()


_CURRENT: ContextVar[Call | None] = ContextVar("waystone_call", default=None)


@contextmanager
def call(
    tool: str,
    deadline: float,
    *,
    lease_ends: Callable[[], float | None] = lambda: None,
    still_held: Callable[[], bool] = lambda: True,
    checked_at: float | None = None,
) -> Iterator[Call]:
    """The provider call of ``tool`` made inside, checked once here. ``checked_at``: when
    a write of the intent last found the run this lease's (monotonic); the run's row is
    read again only once more than ``RECHECK_S`` has passed since."""
    current = Call(tool, deadline, lease_ends, still_held)
    if checked_at is not None:
        current.read_at = checked_at
    current.check()
    token = _CURRENT.set(current)
    try:
        yield current
    finally:
        _CURRENT.reset(token)


def current() -> Call | None:
    """The call under way in this context (``None`` outside an effect's ``apply``)."""
    return _CURRENT.get()


def before_send() -> dict[str, str]:
    """The last check before a request leaves, and the headers that carry its deadline
    (none outside an effect's ``apply``, or in a thread it started: a context variable
    does not cross threads). A tool with a client of its own calls it too."""
    found = _CURRENT.get()
    if found is None:
        return {}
    found.check()
    crash_point("effect:before-send", found.tool)
    found.sent += 1
    return {HEADER: f"{found.deadline:.3f}"}
