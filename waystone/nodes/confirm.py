"""confirm: read the effect back from the provider and record the confirmation."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from waystone.crash import crash_point
from waystone.errors import PermanentError, TransientError, UnknownOutcome
from waystone.graph.ports import Ports
from waystone.graph.state import AgentState


def make_confirm(ports: Ports) -> Any:
    def confirm(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        action = state.get("action")
        assert action is not None
        scope = ports.scope(config)
        tool = ports.tool(action["tool"])
        assert tool is not None
        confirmation = state.get("confirmation")
        if confirmation is None:
            row = ports.ledger.get(action["key"])
            if row is not None and row.status == "confirmed" and row.confirmation:
                confirmation = row.confirmation
        if confirmation is None:
            receipt = state.get("receipt") or {}
            try:
                confirmation = tool.confirm(action["args"], action["key"], receipt, tool.timeout_s)
            except (TransientError, UnknownOutcome, PermanentError) as exc:
                reason = f"could not read back {tool.name} ({action['key']}): {exc}"
                scope.event("confirm-failed", reason, {"key": action["key"]})
                return {"outcome": {"state": "needs-human", "reason": reason, "at": "confirm"}}
            crash_point("confirm:after-lookup", tool.name)
            if confirmation is None:
                reason = f"{tool.name} was applied but the provider does not show it"
                scope.event("confirm-failed", reason, {"key": action["key"]})
                return {"outcome": {"state": "needs-human", "reason": reason, "at": "confirm"}}
            ports.ledger.update(
                action["key"], "confirmed", confirmation=confirmation, fence=scope.fence
            )
            scope.event("effect-confirmed", f"{tool.name} read back", {"key": action["key"]})
            crash_point("confirm:after-record", tool.name)
        done = {
            "ordinal": action["ordinal"],
            "tool": tool.name,
            "key": action["key"],
            "args": action["args"],
            "confirmation": confirmation,
        }
        return {
            "confirmation": confirmation,
            "completed": [done],
            "evidence": [{"step": "confirm", "tool": tool.name, "key": action["key"]}],
        }

    return confirm
