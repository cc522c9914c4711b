"""One tick of one cron, taken inside its ticker's transaction (see
:mod:`waystone._runtime.crons`): its run started, with a start key of the cron and the
tick's time, or passed over with the reason; either way recorded once in
``cron_ticks``."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from waystone._runs import schedule
from waystone.errors import TransitionNotAllowed

if TYPE_CHECKING:
    from waystone._db.database import Conn
    from waystone._runtime.catalog import Catalog
    from waystone._runtime.crons import Cron
    from waystone._runtime.parts import Parts

_THREADS = uuid.UUID("0b7f3c2e-6a41-4d2b-9f1e-5c8d7a6b4e3f")  # a stateless tick's thread ids
ENDED = ("done", "failed")  # a thread whose run is in one of these takes the next


def start_key(cron_id: str, tick_at: datetime) -> str:
    """The start key of a tick's run: one run per cron and tick, whoever starts it."""
    return f"cron:{cron_id}:{tick_at.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"


def tick_thread(cron_id: str, tick_at: datetime) -> str:
    """The new thread a stateless cron's tick runs on (derived, so a retry finds it)."""
    return str(uuid.uuid5(_THREADS, start_key(cron_id, tick_at)))


class Tick:
    """One tick of one cron, inside the ticker's transaction (``conn``): its run started,
    or passed over with the reason; either way recorded once in ``cron_ticks``."""

    def __init__(
        self, parts: Parts, catalog: Catalog, cron: Cron, plan: schedule.Tick, owner: str
    ) -> None:
        assert plan.at is not None
        self._parts, self._catalog = parts, catalog
        self.cron, self.plan, self.owner = cron, plan, owner
        self.at: datetime = plan.at
        self.key = start_key(cron.cron_id, plan.at)
        self.thread_id = cron.thread_id or tick_thread(cron.cron_id, plan.at)

    def take(self, conn: Conn) -> None:
        cron, registry = self.cron, self._parts.registry
        if self._parts.db.execute("tick_taken", conn, cron_id=cron.cron_id, tick_at=self.at):
            return  # taken before (its cron's row is locked: by no one else now)
        busy = self._busy(conn)
        if busy is not None:
            self._record(conn, "skipped", busy)
            registry.event(self.thread_id, "cron-skipped", busy, self._evidence(), conn=conn)
            return
        entry = self._catalog.entry(cron.agent)
        reason = f"started by cron {cron.cron_id} for its tick at {self.at.isoformat()}"
        try:
            registry.create(
                thread_id=self.thread_id,
                agent=cron.agent,
                goal=entry.describe(cron.input),
                input=cron.input,
                start_key=self.key,
                actor="cron",
                reason=reason,
                conn=conn,
                next_run=not entry.one_run,
            )
        except TransitionNotAllowed as exc:
            self._record(conn, "skipped", f"the tick started no run: {exc}")
            return
        if cron.owner is not None and cron.thread_id is None:
            self._parts.db.execute("own_thread", conn, thread_id=self.thread_id, owner=cron.owner)
        self._record(conn, "started", reason)
        if self.plan.missed:
            registry.event(
                self.thread_id, "cron-missed", self._missed(), self._evidence(), conn=conn
            )

    def _busy(self, conn: Conn) -> str | None:
        """Why the cron's thread takes no run now: its run has not ended. The reference
        queues the run behind it; Waystone runs one run at a time on a thread."""
        if self.cron.thread_id is None:
            return None
        rows = self._parts.db.execute("get_run", conn, thread_id=self.thread_id)
        if not rows or rows[0]["state"] in ENDED:
            return None
        return (
            f"cron {self.cron.cron_id}'s tick at {self.at.isoformat()} was skipped: thread "
            f"{self.thread_id}'s run is still {rows[0]['state']} (one run at a time)"
        )

    def _missed(self) -> str:
        plan = self.plan
        assert plan.missed_from is not None
        many = f"at least {plan.missed}" if plan.missed >= schedule.MISSED_COUNTED else plan.missed
        return (
            f"cron {self.cron.cron_id} missed {many} tick(s) from {plan.missed_from.isoformat()} "
            f"on (no worker ticked it); only the latest, at {self.at.isoformat()}, was run"
        )

    def _evidence(self) -> dict[str, Any]:
        missed_from = self.plan.missed_from
        return {
            "cron_id": self.cron.cron_id,
            "tick_at": self.at.isoformat(),
            "missed": self.plan.missed,
            "missed_from": missed_from.isoformat() if missed_from else None,
        }

    def _record(self, conn: Conn, outcome: str, reason: str) -> None:
        self._parts.db.execute(
            "record_tick",
            conn,
            cron_id=self.cron.cron_id,
            tick_at=self.at,
            outcome=outcome,
            thread_id=self.thread_id,
            start_key=self.key if outcome == "started" else None,
            reason=reason,
            missed=self.plan.missed,
            missed_from=self.plan.missed_from,
            ticked_by=self.owner,
        )
