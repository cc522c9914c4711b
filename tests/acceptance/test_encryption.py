"""Encryption at rest: with WAYSTONE_ENCRYPTION_KEY set, a scan of every text, JSONB and
BYTEA column finds neither the personal data nor the order id, the amount or the goal
text; without the key the run cannot be read back, and the error says so."""

from __future__ import annotations

import json

import psycopg

from tests.conftest import Cli
from tests.support.scan import scan
from waystone.examples.provider import ProviderProcess

KEY = {"WAYSTONE_ENCRYPTION_KEY": "5e" * 32}
ORDER, AMOUNT, GOAL = "ORD-7731-XK", "987.65", "Refund the Lisbon teapot order quickly"
EMAIL, PHONE = "joao.silva@example.org", "+351 912 345 678"


def test_everything_is_sealed_and_unreadable_without_the_key(
    cli: Cli, provider: ProviderProcess, database_url: str
) -> None:
    data = {"order_id": ORDER, "amount": AMOUNT, "currency": "EUR", "email": EMAIL, "phone": PHONE}
    started = cli(
        "start", "--agent", "refund", "--input", json.dumps(data), "--goal", GOAL, "--json", env=KEY
    )
    assert started.returncode == 0, started.stderr
    thread_id = json.loads(started.stdout)["thread_id"]
    assert json.loads(cli("run", thread_id, "--json", env=KEY).stdout)["state"] == "waiting"
    assert cli("approve", thread_id, "--by", "ana", env=KEY).returncode == 0
    done = cli("run", thread_id, "--json", env=KEY)
    assert json.loads(done.stdout)["state"] == "done", done.stderr
    ledger = provider.ledger()
    assert [(r["order_id"], r["amount"]) for r in ledger["refunds"]] == [(ORDER, AMOUNT)]
    assert [n["to"] for n in ledger["notifications"]] == [EMAIL]

    with psycopg.connect(database_url) as conn:
        assert scan(conn, [EMAIL, PHONE, ORDER, AMOUNT, GOAL]) == []
        assert scan(conn, ["refund"]), "the scan must see structural values (tool names)"

    history = cli("history", thread_id, "--json", env=KEY)  # with the key: readable
    assert history.returncode == 0 and ORDER in history.stdout
    for command in (("status", thread_id), ("history", thread_id)):
        refused = cli(*command)  # without the key
        assert refused.returncode == 2, refused.stdout
        assert "WAYSTONE_ENCRYPTION_KEY" in refused.stderr
        assert ORDER not in refused.stdout + refused.stderr
