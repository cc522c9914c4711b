"""propose: ask the proposer for the next action and give it its identity (key, digest)."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from waystone.crash import crash_point
from waystone.effects.keys import action_digest, idempotency_key
from waystone.errors import PermanentError
from waystone.graph.ports import Ports, thread_id_of
from waystone.graph.state import Action, AgentState
from waystone.proposers import ProposalContext


def make_propose(ports: Ports) -> Any:
    agent = ports.agent

    def propose(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        thread_id = thread_id_of(config)
        steps = state.get("steps", 0) + 1
        ctx = ProposalContext(
            goal=state.get("goal", ""),
            input=state.get("input", {}),
            completed=state.get("completed", []),
            failure=state.get("failure"),
            evidence=state.get("evidence", []),
        )
        proposal = agent.proposer.propose(ctx, list(agent.tools.values()))
        crash_point("propose:after-model")
        cleared: dict[str, Any] = {
            "steps": steps,
            "decision": None,
            "receipt": None,
            "confirmation": None,
        }
        if proposal is None:
            idle = {"step": "propose", "note": "proposer has no further action"}
            return {**cleared, "action": None, "evidence": [idle]}
        tool = agent.tool(proposal.tool)
        if tool is None:
            reason = f"the proposer asked for unknown tool {proposal.tool!r}"
            return {**cleared, "action": None, "outcome": {"state": "failed", "reason": reason}}
        try:
            args = tool.validate(proposal.args)
        except PermanentError as exc:
            return {
                **cleared,
                "action": None,
                "outcome": {"state": "failed", "reason": f"proposal rejected: {exc}"},
            }
        ordinal = state.get("ordinal", 0) + 1
        action: Action = {
            "ordinal": ordinal,
            "tool": tool.name,
            "args": args,
            "risk": tool.risk,
            "key": idempotency_key(thread_id, ordinal, tool.name, args),
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
