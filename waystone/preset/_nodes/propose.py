"""propose: ask the proposer for the next action and give it its identity (key, digest).

An invalid proposal (an unknown tool, arguments that do not validate) is kept in the
state's ``corrections`` and the node runs again, so the proposer sees its error; the count
lives in the checkpoint, so a crash mid-correction does not give the proposer a fresh
budget. Past the proposer's budget the run fails.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

from langchain_core.runnables import RunnableConfig

from waystone._crash import crash_point
from waystone._hints import requeue_command
from waystone._retry import retry
from waystone.effects._keys import action_digest, idempotency_key
from waystone.effects.tools import Tool
from waystone.errors import PermanentError
from waystone.preset._graph.ports import Ports, RunScope
from waystone.preset._graph.state import Action, AgentState
from waystone.preset.proposers import Proposal, ProposalContext, correction_budget

T = TypeVar("T")


class ModelUnavailable(Exception):
    """The model did not answer within its budget, every attempt."""


def _call(fn: Callable[[], T], timeout_s: float) -> T:
    """Run ``fn`` with a deadline. A call that overruns is abandoned (its thread is a daemon)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller
            box["error"] = exc

    worker = threading.Thread(target=target, name="waystone-model-call", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise TimeoutError(f"no answer within {timeout_s:g}s")
    if "error" in box:
        raise box["error"]
    return cast(T, box["value"])


def _ask(ports: Ports, scope: RunScope, ctx: ProposalContext) -> Proposal | None:
    """Ask the proposer, each call with the model budget; transient trouble is retried with
    backoff and recorded on the run's history. Permanent errors propagate."""
    agent, policy = ports.agent, ports.model_retry

    def noted(exc: Exception, attempt: int, wait: float | None) -> None:
        kind = "model-timeout" if isinstance(exc, TimeoutError) else "model-error"
        scope.event(kind, f"{type(exc).__name__}: {exc}", {"attempt": attempt})

    try:
        return retry(
            lambda: _call(
                lambda: agent.proposer.propose(ctx, list(agent.tools.values())),
                ports.model_timeout_s,
            ),
            policy,
            # a timeout, a 429, a dropped connection: anything but a permanent error
            retry_on=lambda exc: not isinstance(exc, PermanentError),
            on_failure=noted,
        )
    except PermanentError:
        raise
    except Exception as exc:
        raise ModelUnavailable(
            f"the model failed {policy.max_attempts} times (see the history); "
            f"check the provider, then {requeue_command(scope.thread_id)}"
        ) from exc


def _check(ports: Ports, proposal: Proposal) -> tuple[Tool, dict[str, Any]]:
    """The proposal's tool and validated arguments; :class:`PermanentError` saying what is
    wrong, in words the proposer can act on."""
    tool = ports.agent.tool(proposal.tool)
    if tool is None:
        known = ", ".join(ports.agent.tools) or "none"
        raise PermanentError(f"{proposal.tool!r} is not a valid tool, try one of [{known}]")
    return tool, tool.validate(proposal.args)


def make_propose(ports: Ports) -> Any:
    budget = correction_budget(ports.agent.proposer)

    def propose(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        scope = ports.scope(config)
        corrections = state.get("corrections") or []
        # a correction asks again for the same step: it spends none of the step budget
        steps = state.get("steps", 0) + (0 if corrections else 1)
        ctx = ProposalContext(
            goal=state.get("goal", ""),
            input=state.get("input", {}),
            completed=state.get("completed", []),
            completed_count=state.get("completed_count", 0),
            failure=state.get("failure"),
            evidence=state.get("evidence", []),
            corrections=corrections,
        )
        cleared: dict[str, Any] = {
            "steps": steps,
            "decision": None,
            "receipt": None,
            "confirmation": None,
            "corrections": None,
        }
        try:
            proposal = _ask(ports, scope, ctx)
        except ModelUnavailable as exc:
            outcome = {"state": "needs-human", "reason": str(exc), "at": "propose"}
            return {**cleared, "action": None, "outcome": outcome}
        crash_point("propose:after-model", proposal.tool if proposal else None)
        if proposal is None:
            idle = {"step": "propose", "note": "proposer has no further action"}
            return {**cleared, "action": None, "evidence": [idle]}
        try:
            tool, args = _check(ports, proposal)
        except PermanentError as exc:
            return {**cleared, **_rejected(scope, proposal, str(exc), corrections, budget)}
        ordinal = state.get("ordinal", 0) + 1
        action: Action = {
            "ordinal": ordinal,
            "tool": tool.name,
            "args": args,
            "risk": tool.risk,
            # from the key namespace: a fork proposing the original's action gets its key
            "key": idempotency_key(scope.key_namespace, ordinal, tool.name, args),
            "digest": action_digest(tool.name, args),
        }
        note: dict[str, Any] = {"step": "propose", "tool": tool.name, "ordinal": ordinal}
        if corrections:
            note["corrections"] = len(corrections)
        return {
            **cleared,
            "action": action,
            "ordinal": ordinal,
            "failure": None,
            "evidence": [note],
        }

    return propose


def _rejected(
    scope: RunScope,
    proposal: Proposal,
    error: str,
    corrections: list[dict[str, Any]],
    budget: int,
) -> dict[str, Any]:
    """The update for an invalid proposal: handed back to the proposer while its budget
    lasts (the history records each), then the run fails with the last error."""
    if len(corrections) < budget:
        rejected = {"tool": proposal.tool, "args": proposal.args, "error": error}
        n = len(corrections) + 1
        scope.event(
            "proposal-corrected",
            f"invalid proposal handed back to the proposer ({n} of {budget}): {error}",
            {"tool": proposal.tool, "args": proposal.args, "correction": n, "budget": budget},
        )
        return {"action": None, "corrections": [*corrections, rejected]}
    if budget:
        reason = (
            f"the proposer's action was invalid {budget + 1} times in a row "
            f"({budget} corrections spent); last: {error}"
        )
    else:
        reason = f"proposal rejected: {error}"
    return {"action": None, "outcome": {"state": "failed", "reason": reason, "at": "propose"}}
