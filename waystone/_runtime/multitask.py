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

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from psycopg.types.json import Jsonb

from waystone._runs.registry import run_id_of
from waystone._runs.signals import RESUME
from waystone._runs.status import RunStatus
from waystone._runtime import options as run_options
from waystone._runtime import rollback
from waystone.errors import BadInput, TransitionNotAllowed, UnknownThread

if TYPE_CHECKING:
    from waystone._db.database import Conn
    from waystone._runtime.options import RunOptions
    from waystone._runtime.parts import Parts

STRATEGIES = ("reject", "enqueue", "interrupt", "rollback")
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


def stopped_in_words(how: str) -> str:
    """What a multitask strategy did to the run it stopped, as a past participle."""
    return {"interrupt": "interrupted", "rollback": "rolled back"}.get(how, "superseded")


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
        self,
        thread_id: str,
        agent: str,
        goal: str,
        input: Any,
        strategy: str,
        by: str,
        options: RunOptions | None = None,
    ) -> int | None:
        """Queue a run (its input already checked and redacted) behind the thread's run
        and do what ``strategy`` says; its number in the thread, ``None`` when the thread's
        run has ended (begin it the usual way). :class:`TransitionNotAllowed` on refusal.
        ``options`` are kept with the queued run, in the same transaction."""
        # read before the run is locked: the lock is held on one pooled connection, and the
        # saver reads on another (later checkpoints of the run change nothing: all its own)
        point = self._rollback_point(thread_id) if strategy == "rollback" else None
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
            if options is not None:
                run_options.store(self._parts, conn, thread_id, number, options)
            if action == "rollback" and (point is None or point[0] != row["run_number"]):
                raise TransitionNotAllowed(
                    f"thread {thread_id!r}'s run changed during the rollback; ask again"
                )
            if action != "enqueue":
                self._stop_until(conn, thread_id, row["run_number"], number, action, by)
            if action == "rollback" and point is not None:
                rollback.restore(self._parts.db, conn, thread_id, point[1])
            return number

    def _rollback_point(self, thread_id: str) -> tuple[int, str | None] | None:
        """The thread's current run's number and the checkpoint from before it."""
        try:
            number = self._parts.registry.get(thread_id).run_number or 1
        except UnknownThread:
            return None
        return number, rollback.before(self._parts.saver, thread_id, run_id_of(thread_id, number))

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
            input=Jsonb(redact(input)),  # sealed at rest, as a run's (its tokens stay)
            evidence=redact(evidence),
            actor=by,
        )

    def _stop_until(
        self, conn: Conn, thread_id: str, current: int, number: int, action: str, by: str
    ) -> None:
        """Stop the current run, then each run queued before run ``number``, as a cancel
        does (each stopped one begins the next), until run ``number`` is the current one."""
        new_id = run_id_of(thread_id, number)
        registry = self._parts.registry
        for stopping in range(current, number):
            how = stopped_in_words(action)
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
            if not begun[0]["begun"]:  # the lock held since the plan forbids it
                raise RuntimeError(f"run {stopping + 1} of {thread_id} did not begin")
