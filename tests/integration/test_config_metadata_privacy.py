"""What LangGraph adds to a checkpoint's metadata (the values of the config's
``configurable`` and ``metadata``) is redacted and, with a key, sealed like the rest: after
runs whose inputs, configurable, metadata, signals and approvals carry personal data, a
scan of every text, JSONB and BYTEA column finds none of it, and metadata filters on those
keys still find their checkpoints."""

from __future__ import annotations

from typing import Any, TypedDict

import psycopg
import pytest

from tests.conftest import REFUND_INPUT
from tests.support.chain import chain
from tests.support.inside import parts
from tests.support.scan import scan
from waystone import Runtime
from waystone.cli.agents import default_agents
from waystone.config import Settings
from waystone.examples.provider import ProviderProcess

EMAIL, PHONE = "ana.lopez@example.com", "+1 415 555 0100"
CARD, IBAN = "4111 1111 1111 1111", "DE89 3704 0044 0532 0130 00"
# the detector's other forms: numbers given as JSON numbers, digits at the end of a word,
# a lower-case IBAN, an internationalised domain, a spaced-out email, a grouped 8-digit phone
CARD_NUMBER, PHONE_NUMBER = 4000056655665556, 4915112345678
IN_A_WORD, LOWER_IBAN = "card5555555555554444", "gb82west12345698765432"
IDN_EMAIL, SPACED_EMAIL, LOCAL_PHONE = "ana@exämple.de", "ana @ example.com", "2345 6789"
FORMS = [IN_A_WORD, LOWER_IBAN, IDN_EMAIL, SPACED_EMAIL, LOCAL_PHONE]
SECRETS = [
    EMAIL, PHONE, CARD, CARD.replace(" ", ""), IBAN, IBAN.replace(" ", ""),
    str(CARD_NUMBER), str(PHONE_NUMBER), "5555555555554444", LOWER_IBAN, "exämple",
    SPACED_EMAIL, LOCAL_PHONE,
]  # fmt: skip


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
    with Runtime(Settings(database_url=database_url), default_agents) as rt:
        data = {
            **REFUND_INPUT,
            "email": EMAIL,
            "phone": PHONE,
            "card": CARD,
            "iban": IBAN,
            "card_number": CARD_NUMBER,
            "mobile": PHONE_NUMBER,
            "notes": FORMS,
        }
        thread_id = rt.start("refund", data).thread_id
        assert rt.run(thread_id).state == "waiting"
        payload = {"from": EMAIL, "card": CARD, "iban": IBAN, "card_number": CARD_NUMBER}
        rt.signal(thread_id, "customer.replied", {**payload, "phone": PHONE_NUMBER, "n": FORMS})
        rt.approve(
            thread_id,
            by=EMAIL,
            comment=f"called {PHONE}; card {CARD}, IBAN {IBAN}; " + "; ".join(FORMS),
        )
        assert rt.run(thread_id).state == "done"

        # a LangGraph graph of the user's on Waystone's saver, its config carrying them
        builder = chain(Note, ("answer", lambda note: {"text": note["text"] + ", answered"}))
        graph = builder.compile(checkpointer=parts(rt).saver)
        config: Any = {
            "configurable": {"thread_id": "support-1", "user_email": EMAIL, "phone": PHONE},
            "metadata": {
                "card": CARD,
                "iban": IBAN,
                "note": f"write to {EMAIL}, or {IDN_EMAIL}; {LOCAL_PHONE}",
                "card_number": CARD_NUMBER,
                "phone": PHONE_NUMBER,
            },
        }
        said = f"hello from {SPACED_EMAIL}, {IN_A_WORD}, {LOWER_IBAN}"
        assert graph.invoke({"text": said}, config) == {"text": said + ", answered"}

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
