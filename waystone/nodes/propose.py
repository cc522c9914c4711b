"""propose: ask the proposer for the next action and give it its identity (key, digest)."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

from langchain_core.runnables import RunnableConfig

from waystone.crash import crash_point
from waystone.effects.keys import action_digest, idempotency_key
from waystone.errors import PermanentError
from waystone.graph.ports import Ports, RunScope
from waystone.graph.state import Action, AgentState
from waystone.proposers import Proposal, ProposalContext

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
    for attempt in range(1, policy.max_attempts + 1):
        try:
            return _call(
                lambda: agent.proposer.propose(ctx, list(agent.tools.values())),
                ports.model_timeout_s,
            )
        except PermanentError:
            raise
        except Exception as exc:  # a timeout, a 429, a dropped connection
            kind = "model-timeout" if isinstance(exc, TimeoutError) else "model-error"
            scope.event(kind, f"{type(exc).__name__}: {exc}", {"attempt": attempt})
            if attempt < policy.max_attempts:
                time.sleep(policy.delay(attempt, random.random()))
    raise ModelUnavailable(
        f"the model failed {policy.max_attempts} times (see the history); "
        "check the provider, then `waystone requeue`"
    )


def make_propose(ports: Ports) -> Any:
    agent = ports.agent

    def propose(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        scope = ports.scope(config)
        steps = state.get("steps", 0) + 1
        ctx = ProposalContext(
            goal=state.get("goal", ""),
            input=state.get("input", {}),
            completed=state.get("completed", []),
            completed_count=state.get("completed_count", 0),
            failure=state.get("failure"),
            evidence=state.get("evidence", []),
        )
        cleared: dict[str, Any] = {
            "steps": steps,
            "decision": None,
            "receipt": None,
            "confirmation": None,
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
        tool = agent.tool(proposal.tool)
        if tool is None:
            reason = f"the proposer asked for unknown tool {proposal.tool!r}"
            return {
                **cleared,
                "action": None,
                "outcome": {"state": "failed", "reason": reason, "at": "propose"},
            }
        try:
            args = tool.validate(proposal.args)
        except PermanentError as exc:
            return {
                **cleared,
                "action": None,
                "outcome": {
                    "state": "failed",
                    "reason": f"proposal rejected: {exc}",
                    "at": "propose",
                },
            }
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
        return {
            **cleared,
            "action": action,
            "ordinal": ordinal,
            "failure": None,
            "evidence": [note],
        }

    return propose
