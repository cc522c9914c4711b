"""Card and phone numbers given as JSON numbers are personal data too: the redactor walks
numbers as well as strings, and tells a phone number from a count by the key it sits
under."""

from __future__ import annotations

from typing import Any

import psycopg

from tests.support.inside import parts
from waystone import Runtime

CARD, PHONE = 4111111111111111, 4155550100


def test_card_and_phone_numbers_given_as_json_numbers_are_redacted(runtime: Runtime) -> None:
    vault = parts(runtime).vault
    value = {
        "card": CARD,
        "customerPhone": PHONE,
        "phones": [491701234567],
        "order_id": 1001,
        "amount": 12000,
        "step": 3,
        "deadline": 1764512303,
        "paid": True,
    }
    redacted = vault.redact(value)
    assert redacted == {
        "card": vault.token_for("card", str(CARD)),
        "customerPhone": vault.token_for("phone", str(PHONE)),
        "phones": [vault.token_for("phone", "491701234567")],
        "order_id": 1001,
        "amount": 12000,
        "step": 3,
        "deadline": 1764512303,
        "paid": True,
    }
    # a tool gets the digits back, as a string
    assert vault.reveal(redacted)["card"] == str(CARD)


def test_a_signal_payload_with_numbers_keeps_no_plain_card_or_phone_number(
    runtime: Runtime, sql: psycopg.Connection[Any]
) -> None:
    data = {"order_id": "1", "amount": "10.00", "currency": "EUR", "email": "a@example.com"}
    thread_id = runtime.start("refund", data).thread_id
    runtime.signal(thread_id, "callback", {"card": CARD, "phone": PHONE, "attempt": 2})
    rows = sql.execute(
        "SELECT payload::text FROM waystone.signals WHERE thread_id = %s", (thread_id,)
    ).fetchall()
    events = sql.execute(
        "SELECT evidence::text FROM waystone.run_events WHERE thread_id = %s", (thread_id,)
    ).fetchall()
    stored = " ".join(text for (text,) in rows + events)
    assert rows and '"attempt": 2' in stored
    assert str(CARD) not in stored and str(PHONE) not in stored
