"""The refund agent accepts exactly the refunds its provider accepts, so a person is never
asked to approve one the provider then refuses with a 422."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import REFUND_INPUT
from waystone.errors import BadInput
from waystone.examples import payments
from waystone.examples.refund import validate_input

AMOUNTS = [
    "120.00",
    "0.50",
    "1000000.01",
    "0120.00",  # a leading zero
    "00.50",
    "١٢٠.٠٠",  # Arabic-Indic digits, which \d matches
    "१२०.००",  # Devanagari
    "１２０.００",  # fullwidth
    "120.0",
    "120",
    "+120.00",
    "-120.00",
    "120.00\n",
    " 120.00",
    "0.00",
    "1e2",
]


def _agent_accepts(raw: dict[str, Any]) -> bool:
    try:
        validate_input(raw)
    except BadInput:
        return False
    return True


def _provider_accepts(raw: dict[str, Any]) -> bool:
    body = {k: raw[k] for k in ("order_id", "amount", "currency")}
    try:
        payments._validate_refund(body)
        payments._validate_notification({"to": raw["email"], "body": "b", "client_ref": "c"})
    except payments.HttpError as exc:
        assert exc.status == 422
        return False
    return True


@pytest.mark.parametrize("amount", AMOUNTS)
def test_the_agent_accepts_an_amount_exactly_when_its_provider_does(amount: str) -> None:
    raw = {**REFUND_INPUT, "amount": amount}
    assert _agent_accepts(raw) == _provider_accepts(raw), amount


@pytest.mark.parametrize(
    "changed", [{"order_id": "  "}, {"email": "   "}, {"currency": "eur"}, {"currency": "EUR\n"}]
)
def test_blank_ids_and_addresses_are_refused_as_by_the_provider(changed: dict[str, str]) -> None:
    raw = {**REFUND_INPUT, **changed}
    assert _provider_accepts(raw) is False
    with pytest.raises(BadInput, match="invalid input for the refund agent"):
        validate_input(raw)
