"""The webhooks' rows (``waystone.webhooks``): armed by the API, made due by the run's stop
(a trigger, in the stop's transaction), claimed by one worker at a time under a lease,
and recorded delivered, retried or failed, each outcome also an event of the run."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from psycopg.types.json import Jsonb

from waystone.errors import TransitionNotAllowed

if TYPE_CHECKING:
    from waystone._db.database import Conn
    from waystone._runs.parts import Parts

# The thread's run, locked against its stop until the arming commits: a stop that
# commits first is seen (and the webhook made due at once), one that comes after waits
# for the armed row and finds it.
LOCK_RUN = """
SELECT r.state, r.reason, 1 + (SELECT count(*) FROM waystone.thread_runs t
                               WHERE t.thread_id = r.thread_id) AS number
FROM waystone.runs r WHERE r.thread_id = %s FOR SHARE
"""
ARM = """
INSERT INTO waystone.webhooks (thread_id, run_number, url)
VALUES (%(thread_id)s, %(number)s, %(url)s)
RETURNING id
"""
# A run that stopped before its webhook was armed: due at once, as the stop's trigger
# would have made it (a run that ended before the thread's current one: its own end,
# the thread's latest checkpoint being another run's).
DUE_NOW = """
UPDATE waystone.webhooks w
SET status = 'due', due_at = clock_timestamp(), next_at = clock_timestamp(),
    run_state = coalesce(t.state, %(state)s), run_reason = coalesce(t.reason, %(reason)s),
    checkpoint_id = CASE WHEN t.number IS NULL THEN
        (SELECT c.checkpoint_id FROM public.checkpoints c
         WHERE c.thread_id = w.thread_id AND c.checkpoint_ns = ''
         ORDER BY c.checkpoint_id DESC LIMIT 1) END
FROM (SELECT 1) one
LEFT JOIN waystone.thread_runs t ON t.thread_id = %(thread_id)s AND t.number = %(number)s
WHERE w.id = %(id)s
"""
CLAIM = """
UPDATE waystone.webhooks w
SET lease_token = w.lease_token + 1, lease_owner = %(owner)s, attempts = w.attempts + 1,
    lease_until = clock_timestamp() + make_interval(secs => %(lease_s)s)
WHERE w.id = (SELECT id FROM waystone.webhooks
              WHERE status = 'due' AND next_at <= clock_timestamp()
                AND (lease_until IS NULL OR lease_until <= clock_timestamp())
              ORDER BY next_at LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING w.*
"""
# The run a delivery is for: the thread's current one, or one that ended before it.
RUN_OF = """
SELECT agent, created_at FROM waystone.thread_runs WHERE thread_id = %(thread_id)s
  AND number = %(number)s
UNION ALL
SELECT agent, created_at FROM waystone.runs WHERE thread_id = %(thread_id)s
LIMIT 1
"""
NEXT_DUE = """
SELECT extract(epoch FROM min(greatest(next_at, coalesce(lease_until, next_at)))
               - clock_timestamp()) AS seconds
FROM waystone.webhooks WHERE status = 'due'
"""
# An outcome lands only under the lease it was claimed with: a worker that lost its
# lease (paused past it while another one took the delivery over) records nothing.
FINISH = """
UPDATE waystone.webhooks
SET status = %(status)s, last_error = %(error)s, lease_until = NULL, lease_owner = NULL,
    next_at = clock_timestamp() + make_interval(secs => %(delay_s)s),
    done_at = CASE WHEN %(status)s = 'due' THEN NULL ELSE clock_timestamp() END
WHERE id = %(id)s AND lease_token = %(lease_token)s AND status = 'due'
RETURNING id
"""


def arm_new(parts: Parts, conn: Conn, thread_id: str, number: int, url: str) -> None:
    """A webhook for the thread's run ``number``, armed in the transaction creating that
    run (queued, or pending behind the thread's run): its stop makes it due."""
    params = {"thread_id": thread_id, "number": number, "url": Jsonb(parts.protect(url))}
    conn.execute(ARM, params)


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
            run = conn.execute(LOCK_RUN, (thread_id,)).fetchone()
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
            row = conn.execute(ARM, {**params, "url": sealed}).fetchone()
            assert row is not None
            if stopped:
                due = {**params, "id": row["id"], "state": run["state"], "reason": run["reason"]}
                conn.execute(DUE_NOW, due)
                conn.execute("SELECT pg_notify('waystone_webhook', %s)", (thread_id,))
        return int(row["id"])

    def disarm(self, webhook_id: int) -> None:
        """Drop a webhook whose request failed before its run went on (nothing happened)."""
        with self._parts.db.transaction() as conn:
            conn.execute(
                "DELETE FROM waystone.webhooks WHERE id = %s AND status = 'armed'", (webhook_id,)
            )

    def claim(self, owner: str, lease_s: float) -> Claimed | None:
        """The first due delivery no other worker holds, leased to ``owner``."""
        with self._parts.db.transaction() as conn:
            row = conn.execute(CLAIM, {"owner": owner, "lease_s": lease_s}).fetchone()
            if row is None:
                return None
            run = conn.execute(
                RUN_OF, {"thread_id": row["thread_id"], "number": row["run_number"]}
            ).fetchone()
        assert run is not None  # a webhook's thread keeps its runs (ON DELETE CASCADE)
        url = self._parts.vault.reveal(self._parts.reveal(row["url"]))
        fields = {k: row[k] for k in Claimed.__dataclass_fields__ if k in row and k != "url"}
        return Claimed(url=str(url), agent=run["agent"], run_created_at=run["created_at"], **fields)

    def seconds_to_next(self) -> float | None:
        """Until the next due delivery may be claimed (0 or less: now); None if none."""
        with self._parts.db.connection() as conn:
            row = conn.execute(NEXT_DUE).fetchone()
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
            if conn.execute(FINISH, params).fetchone() is None:
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
