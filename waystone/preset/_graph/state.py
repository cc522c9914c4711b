"""The graph's state: small, typed, compact.

Receipts and confirmations in the state are summaries; the full records live in the
effect ledger. ``evidence`` keeps the last entries only, so a long run's state stays flat.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypedDict

EVIDENCE_LIMIT = 20
COMPLETED_LIMIT = 8  # the latest confirmed actions; older ones live in the effect ledger


class Action(TypedDict):
    ordinal: int
    tool: str
    args: dict[str, Any]
    risk: str
    key: str
    digest: str


class Outcome(TypedDict):
    state: str  # done | failed | needs-human
    reason: str
    at: str  # the node that ended the run: where a requeue resumes


def keep_recent(left: list[dict[str, Any]], right: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Append, keeping only the newest ``EVIDENCE_LIMIT`` entries."""
    return (left + right)[-EVIDENCE_LIMIT:]


def keep_completed(left: list[dict[str, Any]], right: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Append, keeping only the newest ``COMPLETED_LIMIT`` confirmed actions: the state
    stays the same size however long the run (``completed_count`` counts them all)."""
    return (left + right)[-COMPLETED_LIMIT:]


def merge_checks(
    left: dict[str, dict[str, Any]], right: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    return {**left, **right}


class AgentState(TypedDict, total=False):
    goal: str
    input: dict[str, Any]
    action: Action | None
    decision: dict[str, Any] | None
    receipt: dict[str, Any] | None
    confirmation: dict[str, Any] | None
    failure: dict[str, Any] | None
    corrections: list[dict[str, Any]] | None  # this step's invalid proposals, for the proposer
    completed: Annotated[list[dict[str, Any]], keep_completed]
    completed_count: int
    checks: Annotated[dict[str, dict[str, Any]], merge_checks]
    evidence: Annotated[list[dict[str, Any]], keep_recent]
    ordinal: int
    steps: int
    outcome: Outcome | None


class CheckTask(TypedDict):
    """What verify sends to each parallel check."""

    name: str
    round: int
    input: dict[str, Any]
    completed: list[dict[str, Any]]


# Channels with a reducer (each write adds to them, so every write counts), with the
# reducer and the empty value the channel starts from.
REDUCERS: dict[str, tuple[Callable[[Any, Any], Any], Callable[[], Any]]] = {
    "completed": (keep_completed, list),
    "checks": (merge_checks, dict),
    "evidence": (keep_recent, list),
}
REDUCED = frozenset(REDUCERS)


def initial_state(goal: str, input: dict[str, Any]) -> AgentState:
    """A new run's input: its goal and input. Every other key starts absent, which each
    reader takes as its empty value (``None``, ``0``, ``[]``, ``{}``), so a run's first
    checkpoints carry two values, not fourteen."""
    return {"goal": goal, "input": input}


def changes(state: AgentState | dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """``update`` without the plain keys it would set to the value they already hold (an
    absent key holds ``None``). Such a write changes nothing a reader sees, and costs a
    pending-write row, a new channel version and often a blob in every checkpoint."""
    return {
        k: v
        for k, v in update.items()
        if k in REDUCED or (v != state[k] if k in state else v is not None)  # type: ignore[literal-required]
    }


def applied(state: AgentState | dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """The state as the next step reads it once ``update`` is applied (a reducer's channel
    through its reducer): what a node routes on."""
    after = dict(state)
    for k, v in update.items():
        if k in REDUCERS:
            reduce, empty = REDUCERS[k]
            left = state.get(k)
            after[k] = reduce(empty() if left is None else left, v)
        else:
            after[k] = v
    return after
