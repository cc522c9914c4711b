"""Identifiers are stored readable, so one that holds personal data is refused: each kind
the detector finds, named in the message without the value; ids Waystone and providers
make pass."""

from __future__ import annotations

import pytest

from waystone._privacy.readable import refuse_personal_data
from waystone.errors import BadInput


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("ana.lopez@example.com", "email"),
        ("call +1 415 555 0100", "phone"),
        ("card 4111 1111 1111 1111", "card"),
        ("DE89 3704 0044 0532 0130 00", "iban"),
    ],
)
def test_an_identifier_holding_personal_data_is_refused(value: str, kind: str) -> None:
    with pytest.raises(BadInput, match="thread id holds personal data") as refused:
        refuse_personal_data("thread id", value)
    assert kind in str(refused.value) and value not in str(refused.value)


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "refund-3f1c2a9d0b7e",
        "evt_42",
        "refund.settled",
        "c42f8023-ba22-406b-9abe-4e7323b59d6e",
        "1001",
    ],
)
def test_an_identifier_without_personal_data_passes(value: str | None) -> None:
    refuse_personal_data("signal key", value)
