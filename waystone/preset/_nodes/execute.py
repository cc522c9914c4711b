"""execute: perform the authorized action through the effect ledger, exactly once."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from waystone.preset._graph.ports import Ports
from waystone.preset._graph.state import AgentState

APPROVING = ("allow", "approve", "edit")


def make_execute(ports: Ports) -> Any:
    def execute(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        action, decision = state.get("action"), state.get("decision")
        assert action is not None
        if (
            decision is None
            or decision.get("choice") not in APPROVING
            or decision.get("digest") != action["digest"]
            or decision.get("key") != action["key"]
        ):
            # Defence in depth: routing never gets here without a matching approval.
            reason = f"{action['tool']} reached execute without an approval of this exact action"
            return {"outcome": {"state": "needs-human", "reason": reason, "at": "execute"}}
        tool = ports.tool(action["tool"])
        assert tool is not None
        scope = ports.scope(config)
        result = scope.runner().perform(scope.thread_id, dict(action), tool)
        note = {"step": "execute", "tool": tool.name, "key": action["key"], "status": result.status}
        if result.status in ("applied", "confirmed"):
            return {
                "receipt": result.receipt,
                "confirmation": result.confirmation,
                "evidence": [note],
            }
        if result.status == "failed":
            failure = {"tool": tool.name, "key": action["key"], "error": result.reason}
            return {"receipt": None, "failure": failure, "evidence": [{**note, **failure}]}
        return {
            "outcome": {"state": "needs-human", "reason": result.reason, "at": "execute"},
            "evidence": [note],
        }

    return execute
