"""The webhooks' rows (``waystone.webhooks``): armed by the API, made due by the run's stop
(a trigger, in the stop's transaction), claimed by one worker at a time under a lease,
and recorded delivered, retried or failed, each outcome also an event of the run."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from psycopg.types.json import Jsonb

from waystone import sql
from waystone.errors import TransitionNotAllowed

if TYPE_CHECKING:
    from waystone._db.database import Conn
    from waystone._runs.parts import Parts


def arm_new(parts: Parts, conn: Conn, thread_id: str, number: int, url: str) -> None:
    """A webhook for the thread's run ``number``, armed in the transaction creating that
    run (queued, or pending behind the thread's run): its stop makes it due."""
    params = {"thread_id": thread_id, "number": number, "url": Jsonb(parts.protect(url))}
    conn.execute(sql.query("arm_webhook"), params)


@dataclass(frozen=True)
class Claimed:
    id: int
    thread_id: str
    run_number: int
    url: str
    run_state: str
    run_reason: str | None
    checkpoint_id: str | None
    due_at: datetime
    attempts: int  # this one counted
    lease_token: int
    lease_until: datetime
    agent: str  # the run's graph, and when the run was created
    run_created_at: datetime


class Webhooks:
    def __init__(self, parts: Parts) -> None:
        self._parts = parts

    def arm(self, thread_id: str, number: int, url: str, *, resuming: bool) -> int:
        """A webhook for the thread's run ``number``, due at its next stop: the start's
        (due at once if the run already stopped), or, ``resuming``, the one after the
        interrupt it waits on is answered."""
        with self._parts.db.transaction() as conn:
            run = conn.execute(sql.query("webhook_lock_run"), {"thread_id": thread_id}).fetchone()
            if run is None or (resuming and run["state"] != "waiting"):
                raise TransitionNotAllowed(f"thread {thread_id}'s run waits on no interrupt")
            # a run ended before the thread's current one, or the current one stopped; one
            # queued behind the current run (a higher number) has not begun
            stopped = not resuming and (
                run["number"] > number
                or (run["number"] == number and run["state"] not in ("queued", "running"))
            )
            params = {"thread_id": thread_id, "number": number}
            sealed = Jsonb(self._parts.protect(url))
            row = conn.execute(sql.query("arm_webhook"), {**params, "url": sealed}).fetchone()
            assert row is not None
            if stopped:
                due = {**params, "id": row["id"], "state": run["state"], "reason": run["reason"]}
                conn.execute(sql.query("webhook_due_now"), due)
                conn.execute(sql.query("notify_webhook"), {"thread_id": thread_id})
        return int(row["id"])

    def disarm(self, webhook_id: int) -> None:
        """Drop a webhook whose request failed before its run went on (nothing happened)."""
        with self._parts.db.transaction() as conn:
            conn.execute(sql.query("disarm_webhook"), {"id": webhook_id})

    def claim(self, owner: str, lease_s: float) -> Claimed | None:
        """The first due delivery no other worker holds, leased to ``owner``."""
        with self._parts.db.transaction() as conn:
            row = conn.execute(
                sql.query("claim_webhook"), {"owner": owner, "lease_s": lease_s}
            ).fetchone()
            if row is None:
                return None
            run = conn.execute(
                sql.query("webhook_run"),
                {"thread_id": row["thread_id"], "number": row["run_number"]},
            ).fetchone()
        assert run is not None  # a webhook's thread keeps its runs (ON DELETE CASCADE)
        url = self._parts.vault.reveal(self._parts.reveal(row["url"]))
        fields = {k: row[k] for k in Claimed.__dataclass_fields__ if k in row and k != "url"}
        return Claimed(url=str(url), agent=run["agent"], run_created_at=run["created_at"], **fields)

    def seconds_to_next(self) -> float | None:
        """Until the next due delivery may be claimed (0 or less: now); None if none."""
        with self._parts.db.connection() as conn:
            row = conn.execute(sql.query("next_webhook_due")).fetchone()
        return None if row is None or row["seconds"] is None else float(row["seconds"])

    def finish(
        self, claimed: Claimed, status: str, reason: str, evidence: dict[str, Any], delay_s: float
    ) -> bool:
        """Record the attempt's outcome (``due`` again after ``delay_s``, ``delivered`` or
        ``failed``) and its event, in one transaction; False if the lease was lost."""
        params = {
            "id": claimed.id,
            "lease_token": claimed.lease_token,
            "status": status,
            "error": None if status == "delivered" else reason,
            "delay_s": delay_s,
        }
        with self._parts.db.transaction() as conn:
            if conn.execute(sql.query("finish_webhook"), params).fetchone() is None:
                return False
            kind = {"delivered": "webhook-delivered", "failed": "webhook-failed"}
            self._parts.registry.event(
                claimed.thread_id,
                kind.get(status, "webhook-retry"),
                reason,
                evidence,
                conn=conn,
            )
        return True
