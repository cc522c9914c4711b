"""A new run on a thread whose run has not ended (the LangGraph server API's
``multitask_strategy``): refused, queued behind it, or begun after stopping it.

What to do is a plain decision (:func:`plan`). Doing it is one transaction that locks the
thread's run row, so the run cannot end (nor a worker save a step) halfway: a queued run
waits in ``waystone.pending_runs`` and the transaction that ends the run before it begins
it (``waystone.begin_pending``, at its commit); ``interrupt`` and ``rollback`` stop the
runs ahead by the cancel path (the lease token moves on: no effect starts after the
commit) and begin the new run in the same commit.

No new transition: a stopped run goes to ``failed`` (from queued, running, waiting or
needs-human, as a cancel does), its evidence saying why. A thread whose run waits on an
``interrupt()`` takes a new run at once, whatever the strategy (the reference counts such
a run as not in flight): the waiting run is stopped the same way, ``superseded``, and its
pending interrupt is dropped with it.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from psycopg.types.json import Jsonb

from waystone._checkpointing.database import FENCE_SQL
from waystone._runs.driver import RUN_KEY
from waystone._runs.registry import run_id_of
from waystone._runs.signals import RESUME
from waystone._status import RunStatus
from waystone.errors import BadInput, TransitionNotAllowed

if TYPE_CHECKING:
    from collections.abc import Iterable

    from langgraph.types import StateSnapshot

    from waystone._checkpointing.database import Conn
    from waystone._parts import Parts

STRATEGIES = ("reject", "enqueue", "interrupt", "rollback")
RESTORED = "waystone_restored"  # the metadata key of a checkpoint a rollback wrote
ENDED = ("done", "failed")
ACTIVE = ("queued", "running", "waiting", "needs-human")
REFUSED = (
    "Thread is already running a task. Wait for it to finish or choose a different "
    "multitask strategy."
)


def plan(strategy: str, state: str | None, waiting_for: str | None) -> str:
    """What a new run does on a thread whose current run is in ``state`` (``None``: the
    thread has no run): ``begin`` now, ``refuse``, ``enqueue``, stop the runs ahead and
    begin (``interrupt``, ``rollback``), or ``supersede`` a run waiting on an interrupt."""
    if strategy not in STRATEGIES:
        raise BadInput(f"multitask_strategy must be one of {', '.join(STRATEGIES)}")
    if state is None or state in ENDED:
        return "begin"
    if state == "waiting" and waiting_for == RESUME:
        return "supersede"
    return {"reject": "refuse", "enqueue": "enqueue"}.get(strategy, strategy)


def stopped_as(evidence: dict[str, Any]) -> str | None:
    """How a multitask strategy stopped a run (``interrupt``, ``rollback``,
    ``supersede``), from its evidence; ``None`` when none did."""
    how = evidence.get("multitask")
    return how if isinstance(how, str) else None


def checkpoint_after(newest: str | None) -> str:
    """A checkpoint id that sorts after ``newest`` (LangGraph's newest is the greatest):
    a time-ordered one, or ``newest`` plus one when this clock is behind its writer's."""
    from langgraph.checkpoint.base.id import uuid6

    made = str(uuid6())
    if newest is None or made > newest:
        return made
    return str(uuid.UUID(int=uuid.UUID(newest).int + 1))


def lineage(history: Iterable[StateSnapshot]) -> list[StateSnapshot]:
    """The thread's history (newest first) as the newest checkpoint's ancestors: without
    the checkpoints a rollback left behind (kept, as evidence, on a branch of their own),
    nor the one it wrote to restore an earlier state (the reference writes none)."""
    kept: list[StateSnapshot] = []
    expected: str | None = None
    for snap in history:
        checkpoint_id = snap.config["configurable"]["checkpoint_id"]
        if expected is not None and checkpoint_id != expected:
            continue
        if RESTORED not in (snap.metadata or {}):
            kept.append(snap)
        parent = snap.parent_config
        expected = parent["configurable"]["checkpoint_id"] if parent else None
        if expected is None:
            break
    return kept


@dataclass(frozen=True)
class Pending:
    """A run queued behind its thread's current run."""

    thread_id: str
    number: int
    agent: str
    created_at: datetime

    @property
    def run_id(self) -> str:
        return run_id_of(self.thread_id, self.number)


def pending_status(pending: Pending) -> RunStatus:
    """A queued run as its users see it: ``queued``, nothing run yet."""
    return RunStatus(
        thread_id=pending.thread_id,
        state="queued",
        step=None,
        pending_approval=None,
        agent=pending.agent,
        attempts=0,
        updated_at=pending.created_at.isoformat(),
        reason="queued behind the thread's run",
        decision_recorded=False,
        run_id=pending.run_id,
        run_number=pending.number,
    )


class Multitask:
    def __init__(self, parts: Parts) -> None:
        self._parts = parts

    def pending(self, thread_id: str) -> list[Pending]:
        rows = self._parts.db.fetch_all("pending_runs", thread_id=thread_id)
        return [Pending(r["thread_id"], r["number"], r["agent"], r["created_at"]) for r in rows]

    def add(
        self, thread_id: str, agent: str, goal: str, input: Any, strategy: str, by: str
    ) -> int | None:
        """Queue a run (its input already checked and redacted) behind the thread's run
        and do what ``strategy`` says; its number in the thread, ``None`` when the thread's
        run has ended (begin it the usual way). :class:`TransitionNotAllowed` on refusal."""
        with self._parts.db.transaction() as conn:
            rows = self._parts.db.execute("lock_thread_run", conn=conn, thread_id=thread_id)
            if not rows:  # a thread made before its first run
                return None
            row = rows[0]
            action = plan(strategy, row["state"], row["waiting_for"])
            if action == "begin":
                return None
            if row["agent"] != agent:
                raise TransitionNotAllowed(f"thread {thread_id!r} is a thread of {row['agent']}")
            if action == "refuse":
                raise TransitionNotAllowed(REFUSED)
            number = int(row["run_number"] + row["pending"] + 1)
            self._insert(conn, thread_id, number, agent, goal, input, strategy, by)
            if action != "enqueue":
                self._stop_until(conn, thread_id, row["run_number"], number, action, by)
            return number

    def _insert(
        self,
        conn: Conn,
        thread_id: str,
        number: int,
        agent: str,
        goal: str,
        input: Any,
        strategy: str,
        by: str,
    ) -> None:
        redact = self._parts.registry.redact
        evidence = {"agent": agent, "multitask_strategy": strategy}
        self._parts.db.execute(
            "insert_pending_run",
            conn=conn,
            thread_id=thread_id,
            number=number,
            agent=agent,
            goal=redact(goal),
            input=Jsonb(input),
            evidence=redact(evidence),
            actor=by,
        )

    def _stop_until(
        self, conn: Conn, thread_id: str, current: int, number: int, action: str, by: str
    ) -> None:
        """Stop the current run, then each run queued before run ``number``, as a cancel
        does (each stopped one begins the next), until run ``number`` is the current one;
        for a rollback, the thread's state goes back to what it was before them."""
        before = self._before(thread_id, run_id_of(thread_id, current))
        new_id = run_id_of(thread_id, number)
        registry = self._parts.registry
        for stopping in range(current, number):
            how = {"interrupt": "interrupted", "rollback": "rolled back"}.get(action, action)
            registry.transition(
                thread_id,
                "failed",
                reason=f"{how} by run {new_id} (multitask_strategy)",
                evidence={"cancelled": True, "multitask": action, "by_run": new_id, "by": by},
                from_states=ACTIVE,
                actor=by,
                bump=True,
                conn=conn,
            )
            begun = self._parts.db.execute("begin_pending", conn=conn, thread_id=thread_id)
            assert begun[0]["begun"], f"run {stopping + 1} of {thread_id} did not begin"
        if action == "rollback":
            self._restore(conn, thread_id, before)

    def _before(self, thread_id: str, run_id: str) -> str | None:
        """The checkpoint the thread had before run ``run_id`` wrote any (its newest when
        the run wrote none), ``None`` when there was none: the state a rollback restores."""
        config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        found = list(self._parts.saver.list(config))  # type: ignore[arg-type]
        by_id = {t.config["configurable"]["checkpoint_id"]: t for t in found}
        at = found[0] if found else None
        while at is not None and (at.metadata or {}).get(RUN_KEY) == run_id:
            parent = at.parent_config
            at = by_id.get(parent["configurable"]["checkpoint_id"]) if parent else None
        return at.config["configurable"]["checkpoint_id"] if at is not None else None

    def _restore(self, conn: Conn, thread_id: str, at: str | None) -> None:
        """A new newest checkpoint holding the state at ``at`` (an empty state for
        ``None``), written under the lease token of the run just begun. The rolled-back
        runs' checkpoints stay (history is evidence), off the new newest one's lineage."""
        from langgraph.checkpoint.base import empty_checkpoint

        db = self._parts.db
        token = db.execute("lock_thread_run", conn=conn, thread_id=thread_id)[0]["lease_token"]
        conn.execute(FENCE_SQL, (str(token),))
        newest = db.execute("newest_checkpoint_id", conn=conn, thread_id=thread_id)[0]["newest"]
        new_id = checkpoint_after(newest)
        if at is not None:
            db.execute("copy_checkpoint_as_latest", conn=conn, thread_id=thread_id, at=at,
                       new_id=new_id)  # fmt: skip
            return
        empty = {**empty_checkpoint(), "id": new_id}
        db.execute(
            "insert_empty_checkpoint",
            conn=conn,
            thread_id=thread_id,
            new_id=new_id,
            checkpoint=Jsonb(json.loads(json.dumps(empty, default=str))),
            metadata=Jsonb({"source": "update", "step": -1, "parents": {}, RESTORED: None}),
        )
