"""authorize: policy decides; a person decides through ``interrupt()`` when policy asks.

Nothing with a side effect runs before ``interrupt()``: LangGraph re-runs this node from
its first line when the run resumes.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import interrupt

from waystone._crash import crash_point
from waystone.effects._keys import action_digest, idempotency_key
from waystone.errors import BadInput
from waystone.preset._approval import ApprovalRequest, parse_decision
from waystone.preset._graph.ports import Ports
from waystone.preset._graph.state import Action, AgentState


def make_authorize(ports: Ports) -> Any:
    agent = ports.agent

    def authorize(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        action = state.get("action")
        assert action is not None, "authorize runs only with a proposed action"
        verdict = agent.policy.decide(action["tool"], action["risk"], action["args"])
        if verdict.verdict == "allow":
            decision = {
                "choice": "allow",
                "by": "policy",
                "reason": verdict.reason,
                "digest": action["digest"],
                "key": action["key"],
            }
            crash_point("authorize:after-decision", action["tool"])
            return _approved(ports, config, action, {"decision": decision})
        if verdict.verdict == "deny":
            reason = f"policy denied {action['tool']}: {verdict.reason}"
            return {
                "decision": {
                    "choice": "deny",
                    "by": "policy",
                    "reason": verdict.reason,
                    "digest": action["digest"],
                },
                "outcome": {"state": "failed", "reason": reason, "at": "authorize"},
            }
        request = ApprovalRequest(
            tool=action["tool"],
            args=action["args"],
            reason=verdict.reason,
            idempotency_key=action["key"],
            digest=action["digest"],
            risk=action["risk"],
            ordinal=action["ordinal"],
        )
        raw = interrupt(request.to_payload())
        crash_point("authorize:after-decision", action["tool"])
        update = _apply_decision(ports, ports.scope(config).key_namespace, action, raw)
        decided = update.get("decision")
        if decided is not None and decided["choice"] in ("approve", "edit"):
            return _approved(ports, config, update.get("action", action), update)
        return update

    return authorize


def _approved(
    ports: Ports, config: RunnableConfig, action: Action, update: dict[str, Any]
) -> dict[str, Any]:
    """``update``, approving ``action``. When the provider deduplicates on the key, the
    action's intent commits with this node's checkpoint, and execute calls the provider
    with no commit of its own first. A run stopped in between finds an intent that was
    never acted on, and applies it under its key: the provider keeps one. A drained run
    hands the intent back (see ``Ledger.hand_back``), so that apply is its first attempt;
    after a crash or a takeover it counts as a second (the intent may have been called,
    for all the ledger knows), so a tool allowed a single attempt does not ride: it would
    go to a person without any call. Any other tool's execute commits its intent
    right before the call: found later, an intent means "maybe called", which a lookup
    alone settles only after the provider's deadline, and a tool without one only a
    person can settle."""
    tool = ports.tool(action["tool"])
    scope = ports.scope(config)
    if (
        tool is not None
        and tool.idempotent_by_key
        and tool.retry.max_attempts > 1
        and scope.fence is not None
        and ports.ledger.ride is not None
    ):
        ports.ledger.ride_intent(
            key=action["key"],
            thread_id=scope.thread_id,
            ordinal=action["ordinal"],
            tool=tool.name,
            args=action["args"],
            fence=scope.fence,
        )
    return update


def _apply_decision(
    ports: Ports, key_namespace: str, action: Action, raw: object
) -> dict[str, Any]:
    try:
        decision = parse_decision(raw)
    except BadInput as exc:
        return {"decision": None, "evidence": [{"step": "authorize", "ignored": str(exc)}]}
    if decision.digest != action["digest"] or decision.key != action["key"]:
        note = {
            "step": "authorize",
            "ignored": "decision for another action",
            "digest": decision.digest,
        }
        return {"decision": None, "evidence": [note]}
    record = {**decision.to_dict(), "digest": action["digest"], "key": action["key"]}
    note = {"step": "authorize", "choice": decision.choice, "by": decision.by}
    if decision.choice == "reject":
        reason = f"rejected by {decision.by}: {decision.comment}"
        return {
            "decision": record,
            "evidence": [note],
            "outcome": {"state": "failed", "reason": reason, "at": "authorize"},
        }
    if decision.choice == "edit":
        assert decision.args is not None
        tool = ports.agent.tool(action["tool"])
        assert tool is not None
        try:
            args = tool.validate_edit(action["args"], decision.args)
        except BadInput as exc:
            return {"decision": None, "evidence": [{**note, "ignored": str(exc)}]}
        edited: Action = {
            **action,
            "args": args,
            "digest": action_digest(action["tool"], args),
            "key": idempotency_key(key_namespace, action["ordinal"], action["tool"], args),
        }
        record["digest"], record["key"] = edited["digest"], edited["key"]
        return {"action": edited, "decision": record, "evidence": [note]}
    return {"decision": record, "evidence": [note]}
