"""The detector: what counts as personal data, and what must be left alone."""

from __future__ import annotations

import re

import pytest

from waystone.privacy.pii import Detector, Pattern, iban_ok, luhn_ok

D = Detector()


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("mail ana@example.com now", "email", "ana@example.com"),
        ("call +1 (415) 555-0100 today", "phone", "+1 (415) 555-0100"),
        ("or 415.555.0100.", "phone", "415.555.0100"),
        ("card 4111 1111 1111 1111 ok", "card", "4111 1111 1111 1111"),
        ("card 4111-1111-1111-1111", "card", "4111-1111-1111-1111"),
        ("iban DE89 3704 0044 0532 0130 00 x", "iban", "DE89 3704 0044 0532 0130 00"),
        ("GB82WEST12345698765432", "iban", "GB82WEST12345698765432"),
    ],
)
def test_finds_personal_data(text: str, kind: str, value: str) -> None:
    assert [(f.kind, f.value) for f in D.find(text)] == [(kind, value)]


@pytest.mark.parametrize(
    "text",
    [
        "card 4111111111111112 fails Luhn",
        "ws-refund-1234567890123456abcdef and refund-3f1c2a9d0b7e",
        "amount 120.00 for order 1001 at 2026-11-30T14:18:23.123817+00:00",
        "1f1ecc8f-b9a4-65db-bfff-4553988d10b6",
        "sha256:863a2acab363ddae4d5f916f5f887b2d",
        "ws-notify_customer-01e057b5b4353d9d198c3b7e4a79fb95585e1534",
        "<pii:email:abcdefghijklmnopabcd>",
    ],
)
def test_leaves_ids_amounts_times_and_tokens_alone(text: str) -> None:
    assert list(D.find(text)) == []


def test_checksums() -> None:
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert iban_ok("DE89 3704 0044 0532 0130 00") and not iban_ok("DE00 3704 0044 0532 0130 00")


def test_replace_and_extension() -> None:
    custom = D.with_patterns([Pattern("ssn", re.compile(r"\b\d{3}-\d{2}-\d{4}\b"))])
    text = "ssn 123-45-6789, mail a@b.co"
    assert custom.replace(text, lambda kind, value: f"[{kind}]") == "ssn [ssn], mail [email]"
