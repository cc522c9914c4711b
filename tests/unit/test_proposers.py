"""Proposers: the scripted plan, and ChatModelProposer with a fake tool-calling model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable

from waystone.errors import PermanentError
from waystone.examples import refund
from waystone.proposers import ChatModelProposer, ProposalContext

INPUT = {"order_id": "1001", "amount": "120.00", "currency": "EUR", "email": "ana@example.com"}
TOOLS = [refund.REFUND, refund.NOTIFY]


class FakeToolModel(GenericFakeChatModel):
    """The langchain-core fake chat model, made to accept bound tools (and remember them)."""

    bound: list[Any] = []

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, BaseMessage]:
        type(self).bound = list(tools)
        return self


def fake(*messages: AIMessage) -> FakeToolModel:
    return FakeToolModel(messages=iter(messages))


def test_tool_call_becomes_the_proposal_and_schemas_are_bound() -> None:
    call = {
        "name": "refund",
        "args": {"order_id": "1001", "amount": "120.00", "currency": "EUR"},
        "id": "call_1",
    }
    model = fake(AIMessage(content="refund first", tool_calls=[call]))
    proposal = ChatModelProposer(model).propose(ProposalContext("goal", INPUT), TOOLS)
    assert proposal is not None
    assert (proposal.tool, proposal.args) == ("refund", call["args"])
    assert proposal.rationale == "refund first"
    names = [t["function"]["name"] for t in FakeToolModel.bound]
    assert names == ["refund", "notify_customer"]
    assert FakeToolModel.bound[0]["function"]["parameters"]["required"] == [
        "order_id",
        "amount",
        "currency",
    ]


def test_answer_without_tool_call_means_nothing_more_to_do() -> None:
    model = fake(AIMessage(content="all done"))
    assert ChatModelProposer(model).propose(ProposalContext("goal", INPUT), TOOLS) is None


def test_model_without_tool_calling_is_a_clear_error() -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage(content="x")]))
    with pytest.raises(PermanentError, match="does not support tool calling"):
        ChatModelProposer(model).propose(ProposalContext("goal", INPUT), TOOLS)


def test_scripted_proposer_follows_the_plan_and_stops() -> None:
    proposer = refund.build().proposer
    first = proposer.propose(ProposalContext("g", INPUT), TOOLS)
    assert first is not None and first.tool == "refund"
    second = proposer.propose(ProposalContext("g", INPUT, completed=[{"tool": "refund"}]), TOOLS)
    assert second is not None and second.tool == "notify_customer"
    assert second.args["to"] == "ana@example.com"
    done = [{"tool": "refund"}, {"tool": "notify_customer"}]
    assert proposer.propose(ProposalContext("g", INPUT, completed=done), TOOLS) is None


def test_scripted_proposer_gives_up_after_its_step_failed() -> None:
    proposer = refund.build().proposer
    ctx = ProposalContext("g", INPUT, failure={"tool": "refund", "error": "422"})
    assert proposer.propose(ctx, TOOLS) is None
