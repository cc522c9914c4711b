"""This process's view of the leases it holds, by thread and lease token: whether a lease
still holds, when this process stops counting on it, and the drive's progress marks.

The heartbeat (:mod:`waystone._runs.leases`) keeps a guard per lease; the saver's saves,
the effects a node makes and the preset's ports read and mark them. Below the runs, so
the saver (usable on its own) marks progress without them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

MARGIN = 0.1  # of a lease: how long before its end this process stops counting on it


class LeaseGuard:
    """This process's view of its lease: lost when a heartbeat was refused, or when the
    lease may have expired: by the local monotonic clock, a lease ends its length after
    the last successful renewal was sent (Postgres set the expiry after that), and this
    process stops counting on it a margin earlier. Checked right before an external call,
    so a worker that was frozen past its lease does not call the provider again."""

    def __init__(self, lease_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.lease_seconds = lease_seconds
        self.lost = threading.Event()
        self._clock = clock
        self._renewed = clock()
        self._progressed = self._renewed

    def renewed(self, sent_at: float | None = None) -> None:
        """A renewal succeeded; ``sent_at``: when it was sent (monotonic)."""
        self._renewed = self._clock() if sent_at is None else sent_at

    def ends(self) -> float:
        """The monotonic time from which this process no longer counts on the lease."""
        return self._renewed + self.lease_seconds * (1 - MARGIN)

    def progressed(self) -> None:
        self._progressed = self._clock()

    def since_progress(self) -> float:
        """Seconds since the drive last marked progress (or began)."""
        return self._clock() - self._progressed

    def ok(self) -> bool:
        return not self.lost.is_set() and self._clock() < self.ends()


GUARDS: dict[tuple[str, int], LeaseGuard] = {}  # (thread_id, lease token) -> its guard


def lease_ok(thread_id: str, lease_token: int | None) -> bool:
    """False once this process may no longer hold the lease (True outside a worker)."""
    guard = GUARDS.get((thread_id, lease_token)) if lease_token is not None else None
    return guard is None or guard.ok()


def lease_ends(thread_id: str, lease_token: int | None) -> float | None:
    """The monotonic time from which this process no longer counts on the lease (``None``
    outside a worker); already past once the lease is known lost."""
    guard = GUARDS.get((thread_id, lease_token)) if lease_token is not None else None
    if guard is None:
        return None
    return -float("inf") if guard.lost.is_set() else guard.ends()


def progressed(thread_id: str, lease_token: int | None) -> None:
    """The drive of this run under this lease made progress (nothing outside a drive)."""
    guard = GUARDS.get((thread_id, lease_token)) if lease_token is not None else None
    if guard is not None:
        guard.progressed()
