"""The provider call under way: its deadline, and the last check before a request leaves.

The effect runner opens a :func:`call` around ``tool.apply``. :func:`before_send` is the
last thing a tool does before its request leaves the process (``waystone.effects.http``
calls it after building the client and the request): it refuses to send once this
process's lease may have ended, by the monotonic clock less a margin, so a worker frozen
anywhere before it and woken after a takeover sends nothing. The request then carries
its deadline (``Request-Deadline``, seconds since the epoch): the time the attempt was
counted in the ledger, by Postgres' clock, plus the tool's timeout. A provider that
refuses a request arriving past it also stops one frozen or held in transit after the
check, which is what lets a lookup that finds nothing be trusted (see the runner).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from waystone.crash import crash_point
from waystone.errors import LeaseLost

HEADER = "Request-Deadline"


@dataclass(frozen=True)
class Call:
    tool: str
    deadline: float  # seconds since the epoch: when the attempt was counted, plus the timeout
    lease_ends: float | None  # monotonic: when the lease may end, less a margin (None: none)

    def check(self) -> None:
        """Raise :class:`LeaseLost` once the lease may have ended."""
        if self.lease_ends is not None and time.monotonic() >= self.lease_ends:
            raise LeaseLost(f"the lease may have ended; not calling {self.tool}")


_CURRENT: ContextVar[Call | None] = ContextVar("waystone_call", default=None)


@contextmanager
def call(tool: str, deadline: float, lease_ends: float | None) -> Iterator[Call]:
    """The provider call of ``tool`` made inside, checked once here."""
    current = Call(tool, deadline, lease_ends)
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
    (none outside an effect's ``apply``). A tool with a client of its own calls it too."""
    found = _CURRENT.get()
    if found is None:
        return {}
    found.check()
    crash_point("effect:before-send", found.tool)
    return {HEADER: f"{found.deadline:.3f}"}
