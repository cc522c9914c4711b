"""A user's agent brought as it is: ``create_react_agent`` with a fake tool-calling model,
a read-only tool and a booking tool that asks for approval with ``interrupt()`` and then
books on the example payments provider (``WAYSTONE_PAYMENTS_URL``), whose records count
every booking. For the CLI and workers through ``WAYSTONE_GRAPHS`` (:data:`GRAPHS`).

``trip``: the booking tool declares nothing, as a new user writes it (a fresh
``Idempotency-Key`` per request: the provider books every request); Waystone calls it at
most once. ``trip_keyed``: the same tool declared idempotent by key with
``durable_tool``, sending the ledger's key; made exactly once. ``trip_handled``: ``trip`` whose
``ToolNode`` hands every error to the model. ``trip_hasty``: ``trip_handled`` whose booking
gives up waiting for the provider's answer after :data:`HASTY_TIMEOUT_S` (a read timeout).
"""

from __future__ import annotations

import os
import uuid
import warnings
from typing import Annotated, Any

import httpx
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolArg, tool
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt

import waystone
from tests.support.chat_models import ConversationModel

# WAYSTONE_GRAPHS for a test's processes
GRAPHS = ",".join(
    f"{name}=tests.support.safe_graphs:{name}"
    for name in ("trip", "trip_keyed", "trip_handled", "trip_hasty")
)
ORDER = {"order_id": "7001", "amount": "40.00"}
HASTY_TIMEOUT_S = 1.0


def payments_url() -> str:
    return os.environ["WAYSTONE_PAYMENTS_URL"]


class TripModel(ConversationModel):
    """Looks the order up, then books it, then answers ``done``: by the number of tool
    results in the conversation, so any process asked the same answers the same."""

    def answer(self, messages: list[BaseMessage]) -> BaseMessage:
        results = sum(isinstance(m, ToolMessage) for m in messages)
        calls = [
            {"name": "quote", "args": {"order_id": ORDER["order_id"]}, "id": "call_quote"},
            {"name": "book", "args": dict(ORDER), "id": "call_book"},
        ]
        if results < len(calls):
            answer = AIMessage(content="", tool_calls=[calls[results]])
        else:
            answer = AIMessage(content="done")
        return answer


@tool
def quote(order_id: str) -> str:
    """What booking the order would cost (reads only)."""
    found = httpx.get(f"{payments_url()}/refunds", params={"order_id": order_id}, timeout=10)
    found.raise_for_status()
    return f"{len(found.json())} booking(s) so far for {order_id}"


def _book(order_id: str, amount: str, key: str, timeout_s: float = 60) -> str:
    approved = interrupt({"approve": "book", "order_id": order_id, "amount": amount})
    if approved != "yes":
        return "not booked"
    made = httpx.post(
        f"{payments_url()}/refunds",
        json={"order_id": order_id, "amount": amount, "currency": "EUR"},
        headers={"Idempotency-Key": key},
        timeout=timeout_s,
    )
    made.raise_for_status()
    return f"booked {made.json()['id']}"


@tool("book")
def book(order_id: str, amount: str) -> str:
    """Book the order, once a person approves."""
    return _book(order_id, amount, key=f"naive-{uuid.uuid4()}")


@tool("book")
def book_keyed(order_id: str, amount: str, key: Annotated[str, InjectedToolArg]) -> str:
    """Book the order, once a person approves."""
    return _book(order_id, amount, key=key)


@tool("book")
def book_hasty(order_id: str, amount: str) -> str:
    """Book the order, once a person approves."""
    return _book(order_id, amount, key=f"naive-{uuid.uuid4()}", timeout_s=HASTY_TIMEOUT_S)


def _agent(tools: list[BaseTool] | ToolNode) -> Any:
    from langgraph.prebuilt import create_react_agent
    from langgraph.warnings import LangGraphDeprecatedSinceV10

    with warnings.catch_warnings():  # LangGraph's own prebuilt agent, as the issue asks
        warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
        return create_react_agent(TripModel(responses=[AIMessage("done")]), tools)


def trip() -> Any:
    """The agent as a new user brings it: only the read-only tool says what it is."""
    return _agent([waystone.durable_tool(quote, read_only=True), book])


def trip_keyed() -> Any:
    """The same agent with the booking declared idempotent by key."""
    return _agent(
        [
            waystone.durable_tool(quote, read_only=True),
            waystone.durable_tool(book_keyed, idempotent_by_key=True),
        ]
    )


def trip_handled() -> Any:
    """The undeclared agent with a ``ToolNode`` that turns every error into a message for
    the model (``handle_tool_errors=True``)."""
    tools = [waystone.durable_tool(quote, read_only=True), book]
    return _agent(ToolNode(tools, handle_tool_errors=True))


def trip_hasty() -> Any:
    """``trip_handled`` whose booking times out waiting for the provider's answer."""
    tools = [waystone.durable_tool(quote, read_only=True), book_hasty]
    return _agent(ToolNode(tools, handle_tool_errors=True))
