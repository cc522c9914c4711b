"""What a run looks like to its users (the CLI, the HTTP API, notebooks): its status."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from waystone.runs.registry import Run


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def status_of(
    run: Run,
    step: str | None,
    pending: dict[str, Any] | None,
    recorded: bool,
    lease: dict[str, Any] | None = None,
) -> RunStatus:
    return RunStatus(
        thread_id=run.thread_id,
        state=run.state,
        step=step,
        pending_approval=pending,
        agent=run.agent,
        attempts=run.attempts,
        updated_at=run.updated_at.isoformat(),
        reason=run.reason,
        decision_recorded=recorded,
        waiting_for=run.waiting_for if run.state == "waiting" else None,
        lease=lease if run.state == "running" else None,
    )


def not_runnable(run: Run) -> str:
    hints = {
        "waiting": "it waits for a decision: `waystone approve` or `waystone reject` it first",
        "done": "it is done",
        "failed": "it failed; `waystone requeue` it to try again",
        "needs-human": "it needs a person; `waystone requeue` it once resolved",
        "running": f"another process ({run.lease_owner}) holds its lease",
    }
    return f"run {run.thread_id} is {run.state}: {hints.get(run.state, 'not runnable')}"
