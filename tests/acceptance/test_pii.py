"""Personal data stays out of the history: a scan of every text, JSONB and BYTEA column of
every table finds none of it, while the run completes across
separate processes and the customer's notification reaches the real address."""

from __future__ import annotations

import json

import psycopg

from tests.conftest import REFUND_INPUT, Cli
from tests.support.scan import row_counts, scan
from waystone.examples.provider import ProviderProcess

EMAIL, PHONE, CARD = "ana.lopez@example.com", "+1 415 555 0100", "4111 1111 1111 1111"
SECRETS = [EMAIL, PHONE, CARD, "4111111111111111"]
IBAN = "DE89 3704 0044 0532 0130 00"


def test_no_personal_data_is_stored_in_plain_form(
    cli: Cli, provider: ProviderProcess, database_url: str
) -> None:
    data = {
        **REFUND_INPUT,
        "email": EMAIL,
        "phone": PHONE,
        "card": CARD,
    }
    goal = f"Refund card {CARD} and tell {EMAIL}; call {PHONE} if needed"
    started = cli(
        "start", "--agent", "refund", "--input", json.dumps(data), "--goal", goal, "--json"
    )
    assert started.returncode == 0, started.stderr
    thread_id = json.loads(started.stdout)["thread_id"]
    waiting = cli("run", thread_id, "--json")
    assert json.loads(waiting.stdout)["state"] == "waiting"
    assert EMAIL not in waiting.stdout
    # the approver signs with an email address: it is personal data too
    assert cli("approve", thread_id, "--by", EMAIL, "--comment", f"called {PHONE}").returncode == 0
    done = cli("run", thread_id, "--json")
    assert json.loads(done.stdout)["state"] == "done", done.stdout

    notes = provider.ledger()["notifications"]
    assert [n["to"] for n in notes] == [EMAIL]  # the real customer, resolved at call time
    assert PHONE in notes[0]["body"] and CARD in notes[0]["body"]

    with psycopg.connect(database_url) as conn:
        assert scan(conn, SECRETS) == []
        assert scan(conn, ["1001"]), "the scan must see what is stored in plain form"
        tokens = conn.execute("SELECT kind FROM waystone.vault ORDER BY kind").fetchall()
    assert {k for (k,) in tokens} >= {"email", "phone", "card"}
    history = cli("history", thread_id, "--json")
    assert EMAIL not in history.stdout and "<pii:email:" in history.stdout


def test_erase_makes_a_value_unrecoverable_and_keeps_the_history(
    cli: Cli, provider: ProviderProcess, database_url: str
) -> None:
    data = {"order_id": "7", "amount": "10.00", "currency": "EUR", "email": EMAIL}
    thread_id = json.loads(
        cli("start", "--agent", "refund", "--input", json.dumps(data), "--json").stdout
    )["thread_id"]
    assert json.loads(cli("run", thread_id, "--json").stdout)["state"] == "done"
    before = cli("history", thread_id, "--json")
    erased = cli("erase", "--subject", EMAIL, "--json")
    assert erased.returncode == 0, erased.stderr
    assert len(json.loads(erased.stdout)["erased"]) == 1
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT ciphertext, erased_at IS NOT NULL FROM waystone.vault WHERE kind = 'email'"
        ).fetchone()
    assert row == (None, True)
    after = cli("history", thread_id, "--json")
    assert json.loads(after.stdout)["events"] == json.loads(before.stdout)["events"]
    # a new run for the erased customer cannot reach them: it stops, it does not guess
    again = json.loads(
        cli(
            "start", "--agent", "refund", "--input", json.dumps({**data, "order_id": "8"}), "--json"
        ).stdout
    )["thread_id"]
    final = json.loads(cli("run", again, "--json").stdout)
    assert final["state"] == "failed" and "erased" in final["reason"]
    assert len(provider.ledger()["notifications"]) == 1


def test_an_identifier_holding_personal_data_is_refused_and_creates_nothing(
    cli: Cli, database_url: str
) -> None:
    data = {"order_id": "7", "amount": "10.00", "currency": "EUR", "email": "bo@example.com"}
    started = cli("start", "--agent", "refund", "--input", json.dumps(data), "--json")
    assert started.returncode == 0, started.stderr
    thread_id = json.loads(started.stdout)["thread_id"]
    other = json.dumps({**data, "email": "new.customer@example.com"})  # would be vaulted
    refused = {
        "thread id": ("start", "--agent", "refund", "--input", other, "--thread-id", EMAIL),
        "start key": ("start", "--agent", "refund", "--input", other, "--key", f"iban {IBAN}"),
        "signal name": ("signal", thread_id, EMAIL, "--payload", "{}"),
        "signal key": ("signal", thread_id, "customer.replied", "--key", CARD),
        "fork's thread id": ("fork", thread_id, "--thread-id", f"call {PHONE}"),
    }
    with psycopg.connect(database_url) as conn:
        before = row_counts(conn)
    for what, command in refused.items():
        result = cli(*command)
        assert result.returncode == 2, (what, result.stdout, result.stderr)
        assert "holds personal data" in result.stderr, (what, result.stderr)
        for secret in (EMAIL, IBAN, CARD, PHONE):
            assert secret not in result.stdout + result.stderr, what
    with psycopg.connect(database_url) as conn:
        assert row_counts(conn) == before
