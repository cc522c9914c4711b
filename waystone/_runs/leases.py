"""This process's leases: a guard per lease, and one heartbeat thread that renews them all.

A run this process drives holds a lease (its token fences every write). The heartbeat
renews each lease every third of its length. One thread does it for every run the process
drives, so driving a run starts no thread of its own (a thread per run cost a start and a
join per run: about 3% of a one-action run's time). A renewal the database refuses (the
lease was taken over, or the run moved on) marks the lease lost; the guard also counts a
lease as lost once no renewal succeeded for most of its length, by this process's
monotonic clock (a process frozen past its lease).

Renewals run one after another, the most overdue first, so none may hold up the rest: each
gives up after a sixth of its lease (at most ``RENEWAL_LIMIT_S``) waiting for a connection,
a lock on its run's row or the statement, and is tried again a third of a lease later. A
run whose row stays locked (a transaction left open on it) keeps its renewals failing and
its guard lets it lapse; the other runs are renewed in between. It takes several such rows
at once, each costing the others up to that limit per round, to delay them by a lease.

A lease is renewed only while its drive makes progress. The drive marks it (``progressed``)
at each step boundary and task (the saver's saves), each event a node records and each
provider call it starts: a monotonic timestamp, no round trip. A drive with no mark for
longer than its step budget (its agent's longest bounded wait plus a margin) is stuck: a
call that ignores its timeout, a node that never returns. Its lease is no longer renewed
and lapses, so another worker takes the run over, and Postgres fences the stuck thread out
if it ever goes on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from waystone._checkpointing.lease_guards import GUARDS, LeaseGuard
from waystone._runs.registry import Run, RunRegistry

logger = logging.getLogger(__name__)

RENEWAL_LIMIT_S = 2.0  # the longest one renewal may take before it gives up


def renewal_limit(lease_seconds: float) -> float:
    """How long one renewal of a lease this long may wait before it gives up."""
    return min(lease_seconds / 6, RENEWAL_LIMIT_S)


@dataclass
class _Lease:
    registry: RunRegistry
    run: Run
    lease_seconds: float
    guard: LeaseGuard
    due: float  # monotonic time of its next renewal
    budget_s: float | None  # the longest its drive may go without progress; None: no limit
    on_stuck: Callable[[], None] | None
    lock: threading.Lock = field(default_factory=threading.Lock)  # held while renewing
    stopped: bool = False


class Heartbeats:
    """One thread renewing every lease this process holds, each when it is due."""

    def __init__(
        self, name: str = "waystone-heartbeat", clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.name = name
        self._clock = clock
        self._changed = threading.Condition()
        # (registry, thread, lease token) -> its lease: two runtimes of a process may drive
        # runs with the same id on different databases
        self._leases: dict[tuple[int, str, int], _Lease] = {}
        self._thread: threading.Thread | None = None

    @contextmanager
    def keep(
        self,
        registry: RunRegistry,
        run: Run,
        lease_seconds: float,
        *,
        budget_s: float | None = None,
        on_stuck: Callable[[], None] | None = None,
    ) -> Iterator[LeaseGuard]:
        """Renew ``run``'s lease every third of its length while inside, as long as its
        drive marks progress at least every ``budget_s``; past that the drive is stuck: its
        lease is left to lapse, its guard counts it lost, and ``on_stuck`` is called (on
        the heartbeat's thread). On the way out, a renewal under way is waited for, and
        none starts after."""
        key = (id(registry), run.thread_id, run.lease_token)
        guard = LeaseGuard(lease_seconds, self._clock)
        due = self._clock() + lease_seconds / 3
        lease = _Lease(registry, run, lease_seconds, guard, due, budget_s, on_stuck)
        GUARDS[key[1:]] = guard
        with self._changed:
            self._leases[key] = lease
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._beat, name=self.name, daemon=True)
                self._thread.start()
            self._changed.notify()
        try:
            yield guard
        finally:
            with lease.lock:
                lease.stopped = True
            with self._changed:
                if self._leases.get(key) is lease:
                    del self._leases[key]
            if GUARDS.get(key[1:]) is guard:
                del GUARDS[key[1:]]

    def holding(self) -> int:
        """How many leases are being renewed."""
        with self._changed:
            return len(self._leases)

    def _beat(self) -> None:
        while True:
            try:
                self._round()
            except Exception:  # never die quietly: the leases it holds would lapse
                logger.exception("heartbeat round failed; trying again")
                time.sleep(0.1)

    def _round(self) -> None:
        with self._changed:
            now = self._clock()
            due = sorted(
                (lease for lease in self._leases.values() if lease.due <= now),
                key=lambda lease: lease.due,
            )
            if not due:
                nearest = min((lease.due for lease in self._leases.values()), default=None)
                self._changed.wait(None if nearest is None else nearest - now)
                return
        for lease in due:
            self._renew(lease)

    def _renew(self, lease: _Lease) -> None:
        run = lease.run
        with lease.lock:
            if lease.stopped:
                return
            sent = self._clock()
            lease.due = sent + lease.lease_seconds / 3
            stalled = lease.guard.since_progress()
            if lease.budget_s is not None and stalled > lease.budget_s:
                self._give_up(lease, stalled)
                return
            try:
                held = lease.registry.heartbeat(
                    run.thread_id,
                    run.lease_token,
                    lease.lease_seconds,
                    limit_s=renewal_limit(lease.lease_seconds),
                )
            except Exception:  # away, or its row locked for too long: the next beat retries
                logger.warning("heartbeat failed", extra={"thread_id": run.thread_id})
                return
            if held:
                lease.guard.renewed(sent)
                return
            lease.guard.lost.set()
            lease.stopped = True  # refused: the lease is gone, renewing it cannot succeed
            logger.warning("lease lost", extra={"thread_id": run.thread_id})

    def _give_up(self, lease: _Lease, stalled: float) -> None:
        """A stuck drive: its lease lapses and its guard stops any provider call it makes."""
        run = lease.run
        lease.stopped = True
        lease.guard.lost.set()
        logger.warning(
            "run %s: its drive made no progress for %.1fs (its step budget is %.1fs); "
            "no longer renewing lease %d, another worker takes the run over once it lapses",
            run.thread_id,
            stalled,
            lease.budget_s,
            run.lease_token,
            extra={"thread_id": run.thread_id, "lease_token": run.lease_token},
        )
        if lease.on_stuck is not None:
            try:
                lease.on_stuck()
            except Exception:
                logger.exception(
                    "the stuck drive's handler failed", extra={"thread_id": run.thread_id}
                )


HEARTBEATS = Heartbeats()


@contextmanager
def heartbeat(
    registry: RunRegistry,
    run: Run,
    lease_seconds: float,
    *,
    budget_s: float | None = None,
    on_stuck: Callable[[], None] | None = None,
) -> Iterator[threading.Event]:
    """Renew the lease every third of its length while the drive makes progress (see
    :meth:`Heartbeats.keep`); the event is set if the lease is lost."""
    with HEARTBEATS.keep(
        registry, run, lease_seconds, budget_s=budget_s, on_stuck=on_stuck
    ) as guard:
        yield guard.lost
