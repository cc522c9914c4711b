"""Identifiers a caller chooses: short printable text, or bad input that says why."""

from __future__ import annotations

import re

import pytest

from waystone._identifiers import LIMITS, check_identifier
from waystone.errors import BadInput


@pytest.mark.parametrize(
    "value",
    ["refund-3f1c2a9d0b7e", "evt_42", "Ana María", "refund.settled", "注文-1001", "t" * 200],
)
def test_printable_identifiers_within_the_limit_pass(value: str) -> None:
    assert check_identifier("thread id", value) == value


@pytest.mark.parametrize(
    ("kind", "value", "message"),
    [
        ("thread id", "t" * 3000, "3000 characters long; it may have at most 200"),
        ("agent name", "a" * 65, "at most 64"),
        ("by", "\ud800", "lone surrogate"),
        ("signal name", "refund\nsettled", "U+000A"),
        ("signal key", "k\x00", "U+0000"),
        ("start key", "k\u200b", "ZERO WIDTH SPACE".lower()),
        ("thread id", " t", "starts or ends with a space"),
        ("by", "", "non-empty"),
    ],
)
def test_long_unprintable_or_padded_identifiers_are_bad_input(
    kind: str, value: str, message: str
) -> None:
    with pytest.raises(BadInput, match=re.escape(message)):
        check_identifier(kind, value)  # type: ignore[arg-type]


def test_every_kind_has_a_limit_an_index_row_can_hold() -> None:
    # a signal's unique index row holds its thread id, name and key: 4 bytes a character
    row = 4 * (LIMITS["thread id"] + LIMITS["signal name"] + LIMITS["signal key"])
    assert row < 2704  # Postgres' btree row limit with the default 8 kB pages
