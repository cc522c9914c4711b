"""Proposers: the scripted plan, and ChatModelProposer with a fake tool-calling model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import Runnable

from waystone.examples import refund
from waystone.preset.proposers import ChatModelProposer, ProposalContext

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


def test_model_without_tool_calling_is_refused_at_construction() -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage(content="x")]))
    with pytest.raises(TypeError, match="GenericFakeChatModel does not support tool calling"):
        ChatModelProposer(model)


def test_object_without_bind_tools_is_refused_at_construction() -> None:
    with pytest.raises(TypeError, match="object does not support tool calling"):
        ChatModelProposer(object())  # type: ignore[arg-type]


def test_negative_correction_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="max_corrections must be 0 or more"):
        ChatModelProposer(fake(), max_corrections=-1)


def test_rejected_calls_go_back_to_the_model_as_tool_errors() -> None:
    call = {"name": "refund", "args": {"order_id": "1001"}, "id": "call_2"}
    model = fake(AIMessage(content="", tool_calls=[call]))
    rejected = [
        {"tool": "refnd", "args": {"x": 1}, "error": "'refnd' is not a valid tool"},
        {"tool": "refund", "args": {"order_id": "1001"}, "error": "amount: field required"},
    ]
    proposer = ChatModelProposer(model)
    messages = proposer.conversation(ProposalContext("goal", INPUT, corrections=rejected))
    kinds = [type(m).__name__ for m in messages]
    assert kinds == [
        "SystemMessage",
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
        "ToolMessage",
    ]
    first_call, first_error = messages[2], messages[3]
    assert isinstance(first_call, AIMessage) and isinstance(first_error, ToolMessage)
    assert first_call.tool_calls[0]["name"] == "refnd"
    assert first_call.tool_calls[0]["args"] == {"x": 1}
    assert first_error.tool_call_id == first_call.tool_calls[0]["id"]
    assert first_error.status == "error"
    assert first_error.content == "Error: 'refnd' is not a valid tool\n Please fix your mistakes."
    proposal = proposer.propose(ProposalContext("goal", INPUT, corrections=rejected), TOOLS)
    assert proposal is not None and proposal.tool == "refund"


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
