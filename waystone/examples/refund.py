"""The refund agent: refund an order, then notify the customer.

Its tools talk over HTTP to the example payments provider
(``python -m waystone.examples.payments``): the one :func:`build` is given, or
``WAYSTONE_PAYMENTS_URL``'s when a tool is called.
Policy: refunds above 100.00 need a person's approval; notifications are allowed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from functools import partial
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from waystone.config import DEFAULT_PAYMENTS_URL as DEFAULT_PAYMENTS_URL
from waystone.config import Settings
from waystone.effects import http
from waystone.effects.tools import Tool
from waystone.errors import BadInput
from waystone.preset.policy import Rule, RulePolicy
from waystone.preset.proposers import Proposal, Proposer, ScriptedProposer
from waystone.preset.spec import AgentSpec, Check, CheckResult


def payments_url() -> str:
    """``WAYSTONE_PAYMENTS_URL``, read at each call (the provider of a test may move)."""
    url: str = Settings.read("payments_url")
    return url


# The provider's own rules (examples/payments.py), so that nothing a person is asked to
# approve is refused by the provider after: ASCII digits only (``\d`` matches every
# script's), no leading zero, exactly two places; text that is not blank.
AMOUNT = re.compile(r"(?:0|[1-9][0-9]*)\.[0-9]{2}")


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


class RefundArgs(BaseModel):
    """Refund an order."""

    order_id: str = Field(min_length=1)
    amount: str = Field(description="decimal with two places, e.g. 120.00")
    currency: str = Field(pattern=r"^[A-Z]{3}$")

    _order_id = field_validator("order_id")(_not_blank)

    @field_validator("amount")
    @classmethod
    def _two_places(cls, value: str) -> str:
        if not AMOUNT.fullmatch(value) or Decimal(value) <= 0:
            raise ValueError(
                "amount must be a positive decimal in ASCII digits with two places and no "
                "leading zero, e.g. 120.00"
            )
        return value


class NotifyArgs(BaseModel):
    """Send the customer a message."""

    to: str = Field(min_length=3)
    body: str = Field(min_length=1)

    _text = field_validator("to", "body")(_not_blank)


def _refund_apply(
    where: Callable[[], str], args: dict[str, Any], key: str, timeout: float
) -> dict[str, Any]:
    receipt: dict[str, Any] = http.request(
        "POST",
        f"{where()}/refunds",
        json=args,
        headers={"Idempotency-Key": key},
        timeout=timeout,
    )
    return receipt


def _refund_lookup(
    where: Callable[[], str], args: dict[str, Any], key: str, timeout: float
) -> dict[str, Any] | None:
    del args
    found = http.request(
        "GET", f"{where()}/refunds", params={"idempotency_key": key}, timeout=timeout
    )
    return found[0] if found else None


def _refund_confirm(
    where: Callable[[], str],
    args: dict[str, Any],
    key: str,
    receipt: dict[str, Any],
    timeout: float,
) -> dict[str, Any] | None:
    del args, key
    found: dict[str, Any] | None = http.request(
        "GET", f"{where()}/refunds/{receipt['id']}", timeout=timeout, not_found_ok=True
    )
    return found


def _notify_apply(
    where: Callable[[], str], args: dict[str, Any], key: str, timeout: float
) -> dict[str, Any]:
    receipt: dict[str, Any] = http.request(
        "POST",
        f"{where()}/notifications",
        json={**args, "client_ref": key},
        timeout=timeout,
    )
    return receipt


def _notify_lookup(
    where: Callable[[], str], args: dict[str, Any], key: str, timeout: float
) -> dict[str, Any] | None:
    del args
    found = http.request(
        "GET", f"{where()}/notifications", params={"client_ref": key}, timeout=timeout
    )
    return found[0] if found else None


def _notify_confirm(
    where: Callable[[], str],
    args: dict[str, Any],
    key: str,
    receipt: dict[str, Any],
    timeout: float,
) -> dict[str, Any] | None:
    del receipt
    return _notify_lookup(where, args, key, timeout)


REFUND = Tool(
    name="refund",
    description="Refund an order to the customer's original payment method.",
    args_model=RefundArgs,
    apply=partial(_refund_apply, payments_url),
    lookup=partial(_refund_lookup, payments_url),
    confirm=partial(_refund_confirm, payments_url),
    idempotent_by_key=True,
    risk="high",
)

NOTIFY = Tool(
    name="notify_customer",
    description="Send the customer a message.",
    args_model=NotifyArgs,
    apply=partial(_notify_apply, payments_url),
    lookup=partial(_notify_lookup, payments_url),
    confirm=partial(_notify_confirm, payments_url),
    idempotent_by_key=False,
    risk="low",
    timeout_s=5.0,
    settle_s=1.0,  # the provider refuses a POST past its deadline, by its clock (loopback's)
)

POLICY = RulePolicy(
    rules=[
        Rule(
            "require_approval",
            "refunds above 100.00 need approval",
            tool="refund",
            arg_above=("amount", "100.00"),
        ),
        Rule("allow", "refunds up to 100.00 are allowed", tool="refund"),
        Rule("allow", "notifications are allowed", tool="notify_customer"),
    ]
)


class RefundInput(BaseModel):
    """The refund agent's input; extra fields (a phone number, a note) are kept."""

    model_config = ConfigDict(extra="allow")

    order_id: str = Field(min_length=1)
    amount: str
    currency: str = Field(pattern=r"^[A-Z]{3}$")
    email: str = Field(min_length=3)

    _email = field_validator("email")(_not_blank)


def validate_input(raw: dict[str, Any]) -> dict[str, Any]:
    """The input, if every action the plan makes of it is one the provider accepts (the
    refund's arguments and the notification's address): checked before anything is asked."""
    try:
        model = RefundInput.model_validate(raw)
        RefundArgs(order_id=model.order_id, amount=model.amount, currency=model.currency)
    except ValueError as exc:
        raise BadInput(f"invalid input for the refund agent: {exc}") from exc
    return model.model_dump()


def plan(input: dict[str, Any]) -> list[Proposal]:
    return [
        Proposal(
            "refund",
            {
                "order_id": input["order_id"],
                "amount": input["amount"],
                "currency": input["currency"],
            },
        ),
        Proposal(
            "notify_customer",
            {
                "to": input["email"],
                "body": f"Your refund of {input['amount']} {input['currency']} for order "
                f"{input['order_id']} is on its way"
                + (f" to card {input['card']}" if input.get("card") else "")
                + "."
                + (
                    f" We will call {input['phone']} if anything is unclear."
                    if input.get("phone")
                    else ""
                ),
            },
        ),
    ]


def _confirmed(completed: list[dict[str, Any]], tool: str) -> list[dict[str, Any]]:
    return [c for c in completed if c["tool"] == tool and c.get("confirmation")]


def refund_confirmed(input: dict[str, Any], completed: list[dict[str, Any]]) -> CheckResult:
    """A refund for the order succeeded at the provider, for the amount that was authorized
    (the input's, or the one a person approved in an edit)."""
    for c in _confirmed(completed, "refund"):
        conf = c["confirmation"]
        if (
            conf.get("status") == "succeeded"
            and conf.get("order_id") == input["order_id"]
            and Decimal(conf.get("amount", "0")) == Decimal(c["args"]["amount"])
        ):
            return CheckResult(True, f"refund {conf.get('id')} of {conf.get('amount')} succeeded")
    return CheckResult(False, "no confirmed refund for the order")


def customer_notified(input: dict[str, Any], completed: list[dict[str, Any]]) -> CheckResult:
    for c in _confirmed(completed, "notify_customer"):
        if c["confirmation"].get("to") == input["email"]:
            return CheckResult(True, f"notification {c['confirmation'].get('id')} sent")
    return CheckResult(False, "the customer has not been notified")


def _tools(url: str | None) -> tuple[Tool, Tool]:
    """The two tools, calling the provider at ``url`` (None: ``WAYSTONE_PAYMENTS_URL``'s)."""
    if url is None:
        return REFUND, NOTIFY

    def where() -> str:
        return url.rstrip("/")

    return (
        replace(
            REFUND,
            apply=partial(_refund_apply, where),
            lookup=partial(_refund_lookup, where),
            confirm=partial(_refund_confirm, where),
        ),
        replace(
            NOTIFY,
            apply=partial(_notify_apply, where),
            lookup=partial(_notify_lookup, where),
            confirm=partial(_notify_confirm, where),
        ),
    )


def build(proposer: Proposer | None = None, provider_url: str | None = None) -> AgentSpec:
    """The refund agent; ``proposer`` defaults to the offline scripted plan, and
    ``provider_url`` to ``WAYSTONE_PAYMENTS_URL``'s, read when a tool is called."""
    refund, notify = _tools(provider_url)
    return AgentSpec(
        name="refund",
        tools={refund.name: refund, notify.name: notify},
        policy=POLICY,
        proposer=proposer or ScriptedProposer(plan),
        checks=[
            Check("refund_confirmed", refund_confirmed),
            Check("customer_notified", customer_notified),
        ],
        describe_goal=lambda i: (
            f"Refund {i['amount']} {i['currency']} for order {i['order_id']} and tell {i['email']}."
        ),
        validate_input=validate_input,
    )
