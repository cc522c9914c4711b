"""A fake tool-calling chat model, and refund agents it drives, for the proposer's tests.

``ConversationModel`` is langchain-core's ``FakeMessagesListChatModel`` made to accept bound
tools and to answer by the conversation it is given: its answer after ``n`` tool messages
(the errors handed back to it) is ``responses[n]`` (the last one past the end). So a new
process asked the same conversation answers the same, which a test across a crash needs.
``WAYSTONE_AGENTS=tests.support.chat_models:refund_bad_args`` loads the agent below.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import Field

from waystone import AgentSpec, ChatModelProposer
from waystone.examples import refund

GOOD_REFUND = {"order_id": "1001", "amount": "120.00", "currency": "EUR"}
BAD_REFUND = {"order_id": "1001", "amount": "12O.00", "currency": "EUR"}  # a letter O


class ConversationModel(FakeMessagesListChatModel):
    seen: list[list[BaseMessage]] = Field(default_factory=list)  # every conversation asked

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, BaseMessage]:
        del tools, kwargs
        return self

    def answer(self, messages: list[BaseMessage]) -> BaseMessage:
        """``responses[n]`` after ``n`` tool messages; a subclass answers its own way."""
        errors = sum(isinstance(m, ToolMessage) for m in messages)
        return self.responses[min(errors, len(self.responses) - 1)]

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.seen.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=self.answer(messages))])


def call(tool: str, args: dict[str, Any]) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": tool, "args": args, "id": "call_1"}])


def agent(model: ConversationModel, name: str = "refund-by-model") -> AgentSpec:
    """The refund agent, proposed by ``model``."""
    return dataclasses.replace(refund.build(proposer=ChatModelProposer(model)), name=name)


def refund_bad_args() -> AgentSpec:
    """A model that first names a tool that does not exist, then gives bad arguments."""
    return agent(
        ConversationModel(responses=[call("refnd", GOOD_REFUND), call("refund", BAD_REFUND)])
    )
