"""What a run looks like to its users (the CLI, the HTTP API, notebooks): its status."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from waystone._hints import command, decide_commands, requeue_command
from waystone._runs.registry import PastRun, Run
from waystone._runs.signals import RESUME


@dataclass(frozen=True)
class RunStatus:
    thread_id: str
    state: str
    step: str | None
    pending_approval: dict[str, Any] | None
    agent: str
    attempts: int
    updated_at: str
    reason: str
    decision_recorded: bool
    waiting_for: str | None = None
    lease: dict[str, Any] | None = None  # a running run's: owner, expires_at, expires_in_s
    # a graph's pending interrupt() calls, each {"id", "value"}: what `resume` answers
    interrupts: list[dict[str, Any]] = field(default_factory=list)
    run_id: str | None = None  # which run of its thread (a thread holds one run at a time)
    run_number: int | None = None
    goal: str | None = None  # what the run is for, as stored (personal data as tokens)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def status_of(
    run: Run,
    step: str | None,
    pending: dict[str, Any] | None,
    lease: dict[str, Any] | None = None,
) -> RunStatus:
    """``pending``: the approval the run waits on, if any; once one is approved it is no
    longer pending, and the run is shown as approved (see :func:`shown_reason`)."""
    approved = run.approved_by is not None
    return RunStatus(
        thread_id=run.thread_id,
        state=run.state,
        step=step,
        pending_approval=None if approved else pending,
        agent=run.agent,
        attempts=run.attempts,
        updated_at=run.updated_at.isoformat(),
        reason=shown_reason(run.thread_id, run.reason, run.approved_by),
        decision_recorded=approved,
        waiting_for=run.waiting_for if run.state == "waiting" else None,
        lease=lease if run.state == "running" else None,
        interrupts=list(run.evidence.get("interrupts") or [])
        if run.state == "waiting" and run.waiting_for == RESUME
        else [],
        run_id=run.run_id,
        run_number=run.run_number,
        goal=run.goal,
    )


def past_status(run: PastRun) -> RunStatus:
    """A run that ended before a later run began on its thread."""
    return RunStatus(
        thread_id=run.thread_id,
        state=run.state,
        step=None,
        pending_approval=None,
        agent=run.agent,
        attempts=run.attempts,
        updated_at=run.ended_at.isoformat(),
        reason=run.reason,
        decision_recorded=False,
        run_id=run.run_id,
        run_number=run.number,
        goal=run.goal,
    )


def shown_reason(thread_id: str, reason: str, approved_by: str | None) -> str:
    """A run's reason as its users see it: a run whose approval is recorded but that no
    worker has resumed yet still waits (it moves on when claimed), but no longer for a
    decision."""
    if approved_by is None:
        return reason
    return (
        f"approved by {approved_by}; waiting for a worker to resume it "
        f"(or `waystone run {thread_id}`)"
    )


def not_runnable(run: Run) -> str:
    if run.waiting_for in (None, "approval"):
        waiting = f"it waits for a decision: {decide_commands(run.thread_id)} first"
    elif run.waiting_for == RESUME:
        waiting = (
            f"it waits for a value for its interrupt ({command('status', run.thread_id)} "
            f"shows it): give it, as JSON, to waystone resume {run.thread_id} --value"
        )
    else:
        waiting = (
            f"it waits for the signal {run.waiting_for!r}: "
            f"{command('signal', run.thread_id, run.waiting_for)} delivers it"
        )
    hints = {
        "waiting": waiting,
        "done": "it is done",
        "failed": f"it failed; {requeue_command(run.thread_id)} to try again",
        "needs-human": f"it needs a person; {requeue_command(run.thread_id)} once resolved",
        "running": f"another process ({run.lease_owner}) holds its lease",
    }
    return f"run {run.thread_id} is {run.state}: {hints.get(run.state, 'not runnable')}"
