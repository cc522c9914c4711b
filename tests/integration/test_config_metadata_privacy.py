"""What LangGraph adds to a checkpoint's metadata (the values of the config's
``configurable`` and ``metadata``) is redacted and, with a key, sealed like the rest: after
runs whose inputs, configurable, metadata, signals and approvals carry personal data, a
scan of every text, JSONB and BYTEA column finds none of it, and metadata filters on those
keys still find their checkpoints."""

from __future__ import annotations

from typing import Any, TypedDict

import psycopg
import pytest
from langgraph.graph import END, START, StateGraph

from tests.support.scan import scan
from waystone import Runtime
from waystone.config import Settings
from waystone.examples.provider import ProviderProcess

EMAIL, PHONE = "ana.lopez@example.com", "+1 415 555 0100"
CARD, IBAN = "4111 1111 1111 1111", "DE89 3704 0044 0532 0130 00"
SECRETS = [EMAIL, PHONE, CARD, CARD.replace(" ", ""), IBAN, IBAN.replace(" ", "")]


class Note(TypedDict):
    text: str


@pytest.mark.parametrize("key", [None, "5e" * 32], ids=["redacted", "sealed"])
def test_configurable_and_metadata_values_reach_no_column_in_plain_form(
    database_url: str,
    provider: ProviderProcess,
    monkeypatch: pytest.MonkeyPatch,
    key: str | None,
) -> None:
    del provider  # the refund agent's payments provider, found through the environment
    if key is not None:
        monkeypatch.setenv("WAYSTONE_ENCRYPTION_KEY", key)
    with Runtime(Settings(database_url=database_url)) as rt:
        data = {
            "order_id": "1001",
            "amount": "120.00",
            "currency": "EUR",
            "email": EMAIL,
            "phone": PHONE,
            "card": CARD,
            "iban": IBAN,
        }
        thread_id = rt.start("refund", data).thread_id
        assert rt.run(thread_id).state == "waiting"
        rt.signal(thread_id, "customer.replied", {"from": EMAIL, "card": CARD, "iban": IBAN})
        rt.approve(thread_id, by=EMAIL, comment=f"called {PHONE}; card {CARD}, IBAN {IBAN}")
        assert rt.run(thread_id).state == "done"

        # a LangGraph graph of the user's on Waystone's saver, its config carrying them
        builder = StateGraph(Note)
        builder.add_node("answer", lambda note: {"text": note["text"] + ", answered"})
        builder.add_edge(START, "answer")
        builder.add_edge("answer", END)
        graph = builder.compile(checkpointer=rt.saver)
        config: Any = {
            "configurable": {"thread_id": "support-1", "user_email": EMAIL, "phone": PHONE},
            "metadata": {"card": CARD, "iban": IBAN, "note": f"write to {EMAIL}"},
        }
        assert graph.invoke({"text": "hello"}, config) == {"text": "hello, answered"}

        with psycopg.connect(database_url) as conn:
            assert scan(conn, SECRETS) == []
            assert scan(conn, ["answer"]), "the scan must see structural values (node names)"

        history = list(graph.get_state_history({"configurable": {"thread_id": "support-1"}}))
        found = list(
            graph.get_state_history(
                {"configurable": {"thread_id": "support-1"}}, filter={"user_email": EMAIL}
            )
        )
        assert len(found) == len(history) == 3
        tokens = {dict(s.metadata or {}).get("user_email") for s in found}
        assert len(tokens) == 1 and str(tokens.pop()).startswith("<pii:email:")
