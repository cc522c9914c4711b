"""confirm: read the effect back from the provider and record the confirmation.

A read-back is safe to repeat, so transient trouble is retried with backoff. A tool that
declares ``await_signal`` is confirmed only when the provider's own event arrives (a
webhook delivered with ``waystone signal``): the run waits for it without holding a
process, and a wait that times out follows the tool's policy.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from waystone._crash import crash_point
from waystone._retry import retry
from waystone._runs.waits import SignalTimeout, wait_for_signal
from waystone.effects._ledger import Effect, Note
from waystone.effects.tools import Tool
from waystone.errors import PermanentError, TransientError, UnknownOutcome
from waystone.preset._graph.ports import Ports, RunScope
from waystone.preset._graph.state import Action, AgentState


def _read_back(scope: RunScope, tool: Tool, action: Action, receipt: dict[str, Any]) -> Any:
    """The provider's view of the effect; raises the last error once retries are spent."""
    reveal = scope.ports.reveal

    def noted(exc: Exception, attempt: int, wait: float | None) -> None:
        if wait is not None:
            scope.event("confirm-retry", str(exc), {"key": action["key"], "attempt": attempt})

    return retry(
        lambda: tool.confirm(
            reveal(action["args"]), action["key"], reveal(receipt), tool.timeout_s
        ),
        tool.retry,
        retry_on=(TransientError, UnknownOutcome),
        on_failure=noted,
    )


def make_confirm(ports: Ports) -> Any:
    def confirm(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        action = state.get("action")
        assert action is not None
        scope = ports.scope(config)
        tool = ports.tool(action["tool"])
        assert tool is not None
        confirmation = state.get("confirmation")
        row: Effect | None = None
        if confirmation is None:
            # what execute just wrote, if it ran in this process for this run and lease
            row = ports.ledger.written(
                action["key"], scope.fence, scope.thread_id
            ) or ports.ledger.get(action["key"])
            if row is not None and row.status == "confirmed" and row.confirmation:
                confirmation = row.confirmation
        if confirmation is None:
            try:
                confirmation = _read_back(scope, tool, action, state.get("receipt") or {})
            except (TransientError, UnknownOutcome, PermanentError) as exc:
                reason = f"could not read back {tool.name} ({action['key']}): {exc}"
                scope.event("confirm-failed", reason, {"key": action["key"]})
                return {"outcome": {"state": "needs-human", "reason": reason, "at": "confirm"}}
            crash_point("confirm:after-lookup", tool.name)
            if confirmation is None:
                reason = f"{tool.name} was applied but the provider does not show it"
                scope.event("confirm-failed", reason, {"key": action["key"]})
                return {"outcome": {"state": "needs-human", "reason": reason, "at": "confirm"}}
            row = ports.ledger.update(
                action["key"],
                "confirmed",
                confirmation=confirmation,
                fence=scope.fence,
                note=Note(
                    scope.thread_id,
                    "effect-confirmed",
                    f"{tool.name} read back",
                    {"key": action["key"]},
                ),
                current=row,  # a read-back is safe to repeat: it commits with the checkpoint
            )
            confirmation = row.confirmation  # the redacted copy: the state holds no PII
            crash_point("confirm:after-record", tool.name)
        if tool.await_signal is not None:
            answer = wait_for_signal(tool.await_signal)
            if isinstance(answer, SignalTimeout):
                wait = tool.await_signal
                reason = f"no {wait.name!r} signal within {wait.timeout_s:g}s for {tool.name}"
                scope.event("signal-timeout", reason, {"key": action["key"]})
                return {"outcome": {"state": wait.on_timeout, "reason": reason, "at": "confirm"}}
            confirmation = {**(confirmation or {}), "signal": answer}
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
            "completed_count": state.get("completed_count", 0) + 1,
            "evidence": [{"step": "confirm", "tool": tool.name, "key": action["key"]}],
        }

    return confirm
