"""What ``waystone worker --until-idle`` waits for before it calls itself idle: a run of
its agents held under a lease that nobody renews (a pure decision over the leases
:meth:`RunRegistry.held_leases` reads). A worker killed with the run in hand
leaves work to do: at once when its process is known to be gone (it ran on this machine),
else once its lease expires; a live holder renews its lease (every third of it), and its
run is left to it. A lease that expires later than ``limit_s`` from now is not waited
for: the worker says when it expires and stops."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

LIMIT_S = 300.0  # the longest lease a worker run --until-idle waits for to expire
MARGIN_S = 0.1  # past a lease's expiry, before the next claim


@dataclass(frozen=True)
class HeldLease:
    """A running run's unexpired lease, as Postgres has it (times by its clock)."""

    thread_id: str
    token: int
    owner: str | None
    expires_at: datetime
    expires_in: float  # seconds from now
    dead: bool = False  # its owner ran on this machine and its process is gone

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> HeldLease:
        return cls(
            thread_id=row["thread_id"],
            token=int(row["lease_token"]),
            owner=row["lease_owner"],
            expires_at=row["lease_expires_at"],
            expires_in=float(row["expires_in"]),
            dead=bool(row["dead"]),
        )


@dataclass(frozen=True)
class LeaseWait:
    """``take``: leases of dead owners, to claim now. ``wait_s``: how long to wait before
    claiming again (``None``: the worker is idle). ``new``: leases now waited for, and
    ``beyond``: leases too long to wait for, each given once, to say so."""

    wait_s: float | None
    new: tuple[HeldLease, ...] = ()
    beyond: tuple[HeldLease, ...] = ()
    take: tuple[HeldLease, ...] = ()


@dataclass
class LeaseWatch:
    """The leases an idle worker has seen: a lease whose expiry moved since it was first
    seen was renewed (its holder is alive) and is never waited for again."""

    limit_s: float = LIMIT_S
    relook_s: float = 5.0  # the longest wait between two looks at the leases
    first_seen: dict[tuple[str, int], datetime] = field(default_factory=dict)
    told: set[tuple[str, int]] = field(default_factory=set)
    tried: set[tuple[str, int]] = field(default_factory=set)  # dead owners' leases claimed

    def look(self, held: Sequence[HeldLease]) -> LeaseWait:
        awaited: list[HeldLease] = []
        beyond: list[HeldLease] = []
        # offered until a claim of it is tried: one look may offer more than one claim takes
        take = tuple(x for x in held if x.dead and (x.thread_id, x.token) not in self.tried)
        for lease in held:
            key = (lease.thread_id, lease.token)
            if lease in take:
                continue
            first = self.first_seen.setdefault(key, lease.expires_at)
            if lease.expires_at > first:
                continue  # renewed: a live worker drives it
            (awaited if lease.expires_in <= self.limit_s else beyond).append(lease)
        new = tuple(x for x in awaited if (x.thread_id, x.token) not in self.told)
        too_long = tuple(x for x in beyond if (x.thread_id, x.token) not in self.told)
        self.told.update((x.thread_id, x.token) for x in (*new, *too_long))
        if take:
            return LeaseWait(MARGIN_S, new, too_long, take)
        if not awaited:
            return LeaseWait(None, new, too_long)
        soonest = max(0.0, min(x.expires_in for x in awaited)) + MARGIN_S
        return LeaseWait(min(soonest, self.relook_s), new, too_long)

    def claiming(self, lease: HeldLease) -> None:
        """A claim of a dead owner's ``lease`` is tried now: whatever it gets, the lease is
        not offered again (a claim that fails leaves it to expire, as any other)."""
        self.tried.add((lease.thread_id, lease.token))
