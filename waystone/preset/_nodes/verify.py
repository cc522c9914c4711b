"""verify: run the goal's checks as parallel tasks, then decide: done, or propose again.

Each check is its own LangGraph task (``Send``). When one check fails with an error, the
others' results are already saved as pending writes and are not run again on resume.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Send

from waystone._crash import crash_point
from waystone.preset._graph.ports import Ports
from waystone.preset._graph.state import AgentState, CheckTask

if TYPE_CHECKING:
    from waystone.preset.spec import AgentSpec

CHECK_NODE = "check"


def fan_out(agent: AgentSpec, state: AgentState) -> list[Send]:
    """One ``Send`` per check of the agent, for this round (the current ordinal)."""
    round_ = state.get("ordinal", 0)
    return [
        Send(
            CHECK_NODE,
            CheckTask(
                name=check.name,
                round=round_,
                input=state.get("input", {}),
                completed=state.get("completed", []),
            ),
        )
        for check in agent.checks
    ]


def make_check(ports: Ports) -> Any:
    checks = {c.name: c for c in ports.agent.checks}

    def check(task: CheckTask) -> dict[str, Any]:
        result = checks[task["name"]].fn(task["input"], task["completed"])
        return {
            "checks": {
                task["name"]: {"ok": result.ok, "detail": result.detail, "round": task["round"]}
            }
        }

    return check


def make_verify(ports: Ports) -> Any:
    agent = ports.agent

    def verify(state: AgentState, _config: RunnableConfig) -> dict[str, Any]:
        round_ = state.get("ordinal", 0)
        results = {
            name: r for name, r in state.get("checks", {}).items() if r.get("round") == round_
        }
        failing = sorted(
            n for n in (c.name for c in agent.checks) if not results.get(n, {}).get("ok")
        )
        action = state.get("action")
        crash_point("verify:after-checks", action["tool"] if action else None)
        note = {"step": "verify", "round": round_, "failing": failing}
        if not failing:
            return {
                "outcome": {
                    "state": "done",
                    "reason": "goal verified: all checks pass",
                    "at": "verify",
                },
                "evidence": [note],
            }
        if state.get("action") is None:
            failure = state.get("failure")
            why = f"; last error: {failure['error']}" if failure else ""
            reason = f"goal not verified ({', '.join(failing)}) and no further action{why}"
            return {
                "outcome": {"state": "failed", "reason": reason, "at": "verify"},
                "evidence": [note],
            }
        if state.get("steps", 0) >= agent.max_steps:
            reason = f"step budget of {agent.max_steps} spent; failing checks: {failing}"
            return {
                "outcome": {"state": "failed", "reason": reason, "at": "verify"},
                "evidence": [note],
            }
        return {"evidence": [note]}

    return verify
