"""Proposers: who suggests the next action. The model proposes; the runtime decides.

A proposer returns a :class:`Proposal` (a tool name and arguments) or ``None`` when it has
nothing more to do. It never marks anything done: execution, confirmation and
verification belong to the runtime.

A proposal naming an unknown tool or invalid arguments is handed back to a proposer that
declares ``max_corrections`` (in ``ProposalContext.corrections``, with the error), as
LangGraph's ``ToolNode`` hands a tool call's error back to the model; one without it ends
the run at its first invalid proposal.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

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
    # this step's rejected proposals, oldest first: {"tool", "args", "error"} each
    corrections: list[dict[str, Any]] = field(default_factory=list)


class Proposer(Protocol):
    def propose(self, ctx: ProposalContext, tools: Sequence[Tool]) -> Proposal | None: ...


def correction_budget(proposer: Proposer) -> int:
    """How many invalid proposals in a row ``proposer`` may correct: its ``max_corrections``
    when it declares one (it reads ``ProposalContext.corrections``), otherwise none."""
    return max(0, int(getattr(proposer, "max_corrections", 0)))


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
    An answer without a tool call means the model considers the goal reached. A call to an
    unknown tool or with invalid arguments goes back to the model as a tool message with
    the error, up to ``max_corrections`` times in a row, before the run fails.
    """

    def __init__(
        self,
        model: BaseChatModel,
        system_prompt: str = DEFAULT_SYSTEM_PROMPT,
        *,
        max_corrections: int = 3,
    ) -> None:
        if not supports_tool_calling(model):
            raise TypeError(
                f"{type(model).__name__} does not support tool calling (it has no "
                "bind_tools()); ChatModelProposer needs a chat model with tool calling"
            )
        if max_corrections < 0:
            raise ValueError(f"max_corrections must be 0 or more, not {max_corrections}")
        self.model = model
        self.system_prompt = system_prompt
        self.max_corrections = max_corrections

    def propose(self, ctx: ProposalContext, tools: Sequence[Tool]) -> Proposal | None:
        try:
            bound = self.model.bind_tools([t.schema() for t in tools])
        except NotImplementedError as exc:
            raise PermanentError(
                f"{type(self.model).__name__} does not support tool calling; "
                "ChatModelProposer needs a model with bind_tools()"
            ) from exc
        answer = bound.invoke(self.conversation(ctx))
        if not isinstance(answer, AIMessage) or not answer.tool_calls:
            return None
        call = answer.tool_calls[0]
        rationale = answer.content if isinstance(answer.content, str) else ""
        return Proposal(tool=call["name"], args=dict(call["args"]), rationale=rationale)

    def conversation(self, ctx: ProposalContext) -> list[BaseMessage]:
        """The briefing, then each rejected call of this step with its error as the tool's
        answer, as ``ToolNode`` answers a call it cannot run."""
        briefing = {
            "goal": ctx.goal,
            "input": ctx.input,
            "completed": ctx.completed,
            "last_failure": ctx.failure,
        }
        messages: list[BaseMessage] = [
            SystemMessage(self.system_prompt),
            HumanMessage(json.dumps(briefing, default=str)),
        ]
        for n, rejected in enumerate(ctx.corrections, start=1):
            call_id = f"rejected_{n}"
            call = {"name": rejected["tool"], "args": rejected["args"], "id": call_id}
            messages.append(AIMessage(content="", tool_calls=[call]))
            messages.append(
                ToolMessage(
                    f"Error: {rejected['error']}\n Please fix your mistakes.",
                    tool_call_id=call_id,
                    status="error",
                )
            )
        return messages


def supports_tool_calling(model: object) -> bool:
    """Whether ``model`` implements ``bind_tools`` (langchain-core's base class only raises
    ``NotImplementedError``)."""
    method = getattr(model, "bind_tools", None)
    if not callable(method):
        return False
    return getattr(method, "__func__", None) is not BaseChatModel.bind_tools
