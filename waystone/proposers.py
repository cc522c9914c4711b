"""Proposers: who suggests the next action. The model proposes; the runtime decides.

A proposer returns a :class:`Proposal` (a tool name and arguments) or ``None`` when it has
nothing more to do. It never marks anything done: execution, confirmation and
verification belong to the runtime.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from waystone.errors import PermanentError

if TYPE_CHECKING:
    from waystone.effects.tools import Tool


@dataclass(frozen=True)
class Proposal:
    tool: str
    args: dict[str, Any]
    rationale: str = ""


@dataclass(frozen=True)
class ProposalContext:
    goal: str
    input: dict[str, Any]
    completed: list[dict[str, Any]] = field(default_factory=list)  # the latest few
    completed_count: int | None = None  # all confirmed actions so far
    failure: dict[str, Any] | None = None
    evidence: list[dict[str, Any]] = field(default_factory=list)


class Proposer(Protocol):
    def propose(self, ctx: ProposalContext, tools: Sequence[Tool]) -> Proposal | None: ...


PlanFn = Callable[[dict[str, Any]], Sequence[Proposal]]


class ScriptedProposer:
    """Follows a fixed plan (a function of the run's input), one step per confirmed action.

    Offline and deterministic: the default for examples and tests. After a permanent
    failure of its next step it has no other action and returns ``None``.
    """

    def __init__(self, plan: PlanFn) -> None:
        self._plan = plan

    def propose(self, ctx: ProposalContext, tools: Sequence[Tool]) -> Proposal | None:
        del tools
        plan = list(self._plan(ctx.input))
        done = ctx.completed_count if ctx.completed_count is not None else len(ctx.completed)
        if done >= len(plan):
            return None
        step = plan[done]
        if ctx.failure is not None and ctx.failure.get("tool") == step.tool:
            return None
        return step


DEFAULT_SYSTEM_PROMPT = (
    "You are an agent that reaches a goal by calling tools, one call at a time. "
    "Call exactly one tool for the next step, or no tool when the goal is reached. "
    "Never repeat an action listed as completed."
)


class ChatModelProposer:
    """Wraps any langchain-core chat model that supports tool calling.

    The tools' schemas are bound to the model; its first tool call becomes the proposal.
    An answer without a tool call means the model considers the goal reached.
    """

    def __init__(self, model: BaseChatModel, system_prompt: str = DEFAULT_SYSTEM_PROMPT) -> None:
        self.model = model
        self.system_prompt = system_prompt

    def propose(self, ctx: ProposalContext, tools: Sequence[Tool]) -> Proposal | None:
        try:
            bound = self.model.bind_tools([t.schema() for t in tools])
        except NotImplementedError as exc:
            raise PermanentError(
                f"{type(self.model).__name__} does not support tool calling; "
                "ChatModelProposer needs a model with bind_tools()"
            ) from exc
        briefing = {
            "goal": ctx.goal,
            "input": ctx.input,
            "completed": ctx.completed,
            "last_failure": ctx.failure,
        }
        answer = bound.invoke(
            [SystemMessage(self.system_prompt), HumanMessage(json.dumps(briefing, default=str))]
        )
        if not isinstance(answer, AIMessage) or not answer.tool_calls:
            return None
        call = answer.tool_calls[0]
        rationale = answer.content if isinstance(answer.content, str) else ""
        return Proposal(tool=call["name"], args=dict(call["args"]), rationale=rationale)
