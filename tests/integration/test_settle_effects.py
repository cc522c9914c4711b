"""A person settles an ``@effect`` of a user's node that has neither a lookup nor key
deduplication (docs/tools.md, "Settling a call by hand"): after its outcome was unknown,
the run needs a person; ``Runtime.settle`` and ``requeue`` finish it, the provider's own
records counting the notes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from langgraph.graph import StateGraph

import waystone
from tests.support.chain import chain
from tests.support.effect_graphs import Notified, send_note
from waystone.examples.provider import ProviderProcess
from waystone.runtime import Runtime

TO = {"to": "someone"}


def _announcing(url: str) -> StateGraph[Notified]:
    @waystone.effect(timeout_s=1)
    def notify(to: str, *, key: str) -> dict[str, Any]:
        return send_note(url, to, "hello", key, 1)

    def announce(state: Notified) -> dict[str, Any]:
        return {"receipts": [notify(to=state["to"])]}

    return chain(Notified, ("announce", announce))


@pytest.fixture
def stopped(runtime: Runtime, provider: ProviderProcess) -> Iterator[tuple[str, str]]:
    """A run whose note was sent and whose answer came too late: (thread id, key)."""
    runtime.register_graph("announce", _announcing(provider.url))
    provider.inject("notifications", "timeout_after_apply", delay_s=3)
    thread_id = runtime.start("announce", TO).thread_id
    last = runtime.run(thread_id)
    assert last.state == "needs-human", last
    [effect] = runtime.history(thread_id)["effects"]
    assert effect["key"] in last.reason and "waystone settle" in last.reason
    yield thread_id, effect["key"]
    provider.clear_faults()


def _notes(provider: ProviderProcess) -> list[dict[str, Any]]:
    return list(provider.ledger()["notifications"])


def _receipts(runtime: Runtime, thread_id: str) -> Any:
    state = runtime.graph("announce").get_state(runtime.config(thread_id))
    return state.values["receipts"]


def test_an_effect_settled_applied_gives_the_receipt_given_back(
    runtime: Runtime, provider: ProviderProcess, stopped: tuple[str, str]
) -> None:
    thread_id, key = stopped
    [note] = _notes(provider)

    runtime.settle(
        thread_id, key, applied=True, receipt={"id": note["id"]}, by="ana", reason="it is there"
    )
    runtime.requeue(thread_id, by="ana", reason="settled")
    done = runtime.run(thread_id)

    assert done.state == "done", done
    assert _notes(provider) == [note]
    assert _receipts(runtime, thread_id) == [{"id": note["id"]}]


def test_an_effect_settled_absent_is_made_again_under_its_key(
    runtime: Runtime, provider: ProviderProcess, stopped: tuple[str, str], database_url: str
) -> None:
    """The person says the provider shows nothing (wrongly, here: the provider does not
    deduplicate, so its records show what the re-run did)."""
    thread_id, key = stopped

    runtime.settle(thread_id, key, applied=False, by="ana", reason="nothing there")
    runtime.requeue(thread_id, by="ana", reason="settled")
    done = runtime.run(thread_id)

    assert done.state == "done", done
    first, again = _notes(provider)
    assert first["client_ref"] == again["client_ref"] == key
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT status, attempts, confirmation FROM waystone.effects WHERE key = %s", (key,)
        ).fetchone()
    assert row == ("applied", 1, None)  # made, and not read back: nobody confirmed it
    assert [r["id"] for r in _receipts(runtime, thread_id)] == [again["id"]]
