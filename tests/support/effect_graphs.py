"""Users' graphs whose nodes make effects on the example payments provider
(``WAYSTONE_PAYMENTS_URL``), for the CLI and workers to load through ``WAYSTONE_GRAPHS``
(:data:`GRAPHS`), and the same nodes calling the provider directly, for a stock saver.

``react_agent``: LangGraph's prebuilt ReAct agent, driven by a fake tool-calling model,
with two tools wrapped by :func:`waystone.durable_tool`, each read back once applied:
``refund`` (the provider deduplicates it by its ``Idempotency-Key``) and ``notify`` (it
does not: every POST sends a message; found again by its ``client_ref``).
``interrupting``: a node that sends a notification and then calls ``interrupt()``.
"""

from __future__ import annotations

import json
import operator
import os
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolArg, tool
from langgraph.graph import StateGraph
from langgraph.types import interrupt

import waystone
from tests.support.chain import chain
from tests.support.chat_models import ConversationModel
from waystone.effects.http import request

GRAPHS = (
    "react=tests.support.effect_graphs:react_agent,"
    "interrupting=tests.support.effect_graphs:interrupting"
)  # WAYSTONE_GRAPHS for a test's processes

NOTIFY_TIMEOUT_S = 2.0  # a notification found absent is sent again once its deadline passed
NOTIFY_SETTLE_S = 1.0  # how late past its deadline the provider may still apply one


def payments_url() -> str:
    return os.environ["WAYSTONE_PAYMENTS_URL"]


def send_note(url: str, to: str, body: str, key: str, timeout_s: float) -> dict[str, Any]:
    """The provider's notifications do not deduplicate: every POST sends one."""
    payload = {"to": to, "body": body, "client_ref": key}
    sent: dict[str, Any] = request("POST", f"{url}/notifications", timeout=timeout_s, json=payload)
    return sent


def find_note(url: str, key: str, timeout_s: float) -> dict[str, Any] | None:
    found = request("GET", f"{url}/notifications", timeout=timeout_s, params={"client_ref": key})
    return found[0] if found else None


class RefundRequestModel(ConversationModel):
    """Asked a JSON request ``{"order_id", "amount", "to"}``, calls ``refund`` and
    ``notify`` in one turn; once their results are back, answers ``done``. The same
    conversation gets the same answer in any process."""

    def answer(self, messages: list[BaseMessage]) -> BaseMessage:
        if any(isinstance(m, ToolMessage) for m in messages):
            answer = AIMessage(content="done")
        else:
            first = next(m for m in messages if isinstance(m, HumanMessage))
            asked = json.loads(str(first.content))
            refund = {"order_id": asked["order_id"], "amount": asked["amount"]}
            answer = AIMessage(
                content="",
                tool_calls=[
                    {"name": "refund", "args": refund, "id": "call_refund"},
                    {"name": "notify", "args": {"to": asked["to"]}, "id": "call_notify"},
                ],
            )
        return answer


@tool
def refund(order_id: str, amount: str, key: Annotated[str, InjectedToolArg]) -> dict[str, Any]:
    """Refund an order."""
    made: dict[str, Any] = request(
        "POST",
        f"{payments_url()}/refunds",
        timeout=10,
        json={"order_id": order_id, "amount": amount, "currency": "EUR"},
        headers={"Idempotency-Key": key},
    )
    return made


@tool
def notify(to: str, key: Annotated[str, InjectedToolArg]) -> dict[str, Any]:
    """Tell the customer their refund is on its way."""
    return send_note(payments_url(), to, "your refund is on its way", key, NOTIFY_TIMEOUT_S)


def _find_refund(key: str) -> dict[str, Any] | None:
    found = request("GET", f"{payments_url()}/refunds", timeout=10, params={"idempotency_key": key})
    return found[0] if found else None


def _find_notify(key: str) -> dict[str, Any] | None:
    return find_note(payments_url(), key, NOTIFY_TIMEOUT_S)


DURABLE_TOOLS = [  # each read back by its key once applied
    waystone.durable_tool(refund, idempotent_by_key=True, confirm=_find_refund),
    waystone.durable_tool(
        notify,
        lookup=_find_notify,
        confirm=_find_notify,
        timeout_s=NOTIFY_TIMEOUT_S,
        settle_s=NOTIFY_SETTLE_S,
    ),
]


def react_agent() -> Any:
    """``create_react_agent`` with the fake model and the two durable tools."""
    import warnings

    from langgraph.prebuilt import create_react_agent
    from langgraph.warnings import LangGraphDeprecatedSinceV10

    with warnings.catch_warnings():  # LangGraph's own prebuilt agent, as the issue asks
        warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
        return create_react_agent(RefundRequestModel(responses=[AIMessage("done")]), DURABLE_TOOLS)


class Notified(TypedDict, total=False):
    to: str
    receipts: Annotated[list[dict[str, Any]], operator.add]
    answer: str


def interrupting_graph(notify: Callable[..., dict[str, Any]]) -> StateGraph[Notified]:
    """announce: ``notify(to=..., body=...)``, then ``interrupt()``; the resume runs the
    node's code again from its start."""

    def announce(state: Notified) -> dict[str, Any]:
        receipt = notify(to=state["to"], body="your refund is on its way")
        answer = interrupt({"ask": "was the customer told?"})
        return {"receipts": [receipt], "answer": answer}

    return chain(Notified, ("announce", announce))


def note_effect(url: str) -> Callable[..., dict[str, Any]]:
    """A notification as a Waystone effect, found again by its key."""

    def find(key: str, timeout_s: float) -> dict[str, Any] | None:
        return find_note(url, key, timeout_s)

    @waystone.effect(lookup=find, timeout_s=10)
    def notify(to: str, body: str, *, key: str, timeout_s: float) -> dict[str, Any]:
        return send_note(url, to, body, key, timeout_s)

    effect: Callable[..., dict[str, Any]] = notify
    return effect


def interrupting() -> StateGraph[Notified]:
    """The interrupting graph with its notification made through the effect ledger."""
    return interrupting_graph(note_effect(payments_url()))


def interrupting_on_stock(url: str, key: str) -> StateGraph[Notified]:
    """The same graph calling the provider directly, as a graph on a stock saver does
    (``key`` is its ``client_ref``)."""

    def notify_directly(to: str, body: str) -> dict[str, Any]:
        return send_note(url, to, body, key, 10)

    return interrupting_graph(notify_directly)
