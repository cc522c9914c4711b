"""A run streaming to a client through the LangGraph server API, its worker SIGKILLed
midway (after the provider applied a notification, before its receipt was recorded):
another worker finishes it, the client's stream and a later join give every event once
and in order, the same events as a run nobody killed, and each effect is made once at
the provider."""

from __future__ import annotations

import json
import threading
from typing import Any

import psycopg
import pytest
from langgraph_sdk.client import SyncLangGraphClient

from tests.acceptance.conftest import Workers
from tests.conftest import wait_until
from tests.support.api import ApiSetup
from tests.support.effect_graphs import GRAPHS
from waystone.examples.provider import ProviderProcess

MODES = ["values", "updates", "messages-tuple"]
ASKED = {"order_id": "1001", "amount": "12.00", "to": "ana@example.com"}


@pytest.fixture
def api_setup() -> ApiSetup:
    return ApiSetup({"WAYSTONE_GRAPHS": GRAPHS}, worker=None)


def asked() -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": json.dumps(ASKED)}]}


def shape(parts: list[Any]) -> list[tuple[str, Any]]:
    """What the events say, without the ids that differ between two runs."""
    said = []
    for part in parts[1:]:  # after the metadata event
        if part.event == "messages":
            said.append((part.event, part.data[0]["type"]))  # a tool's result holds ids
        elif part.event == "updates":
            said.append((part.event, sorted(part.data)))
        else:
            said.append((part.event, len(part.data["messages"])))
    return said


@pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecatedSinceV10")
def test_a_streamed_run_whose_worker_is_killed_streams_each_event_once(
    lg: SyncLangGraphClient,
    workers: Workers,
    provider: ProviderProcess,
    sql: psycopg.Connection[Any],
) -> None:
    graphs = {"WAYSTONE_GRAPHS": GRAPHS}
    killed = workers.spawn(
        "--lease-seconds", "2", env={**graphs, "WAYSTONE_CRASH_AT": "execute:after-apply@notify"}
    )
    # once it is dead, another worker takes the run over (when its lease expires)
    successor = threading.Thread(target=lambda: (killed.wait(), workers.spawn(env=graphs)))
    successor.start()
    thread_id = lg.threads.create()["thread_id"]
    parts = list(lg.runs.stream(thread_id, "react", input=asked(), stream_mode=MODES))
    successor.join(timeout=60)
    assert killed.returncode == -9, workers.output(killed)
    assert len(workers.procs) == 2, "the run ended without the takeover"
    run_id = parts[0].data["run_id"]
    state = sql.execute("SELECT state FROM waystone.runs WHERE thread_id = %s", (thread_id,))
    assert state.fetchone() == ("done",)

    ids = [p.id for p in parts[1:]]
    assert len(ids) == len(set(ids)) and ids == sorted(ids)  # once each, in order
    joined = list(lg.runs.join_stream(thread_id, run_id, stream_mode=MODES))
    assert [p.id for p in joined[1:]] == ids
    assert [p.data for p in joined[1:]] == [p.data for p in parts[1:]]

    clean_thread = lg.threads.create()["thread_id"]
    wait_until(lambda: len(provider.ledger()["notifications"]) == 1, "the first notification")
    clean = list(lg.runs.stream(clean_thread, "react", input=asked(), stream_mode=MODES))
    assert shape(parts) == shape(clean)  # the same events as a run nobody killed
    assert shape(parts)[-1] == ("values", 5)  # the request, the calls, two results, done

    made = provider.ledger()
    by_thread = [n["client_ref"] for n in made["notifications"]]
    keys = sql.execute(
        "SELECT thread_id, tool, key FROM waystone.effects ORDER BY thread_id, tool"
    ).fetchall()
    assert len(made["refunds"]) == 2 and len(by_thread) == 2  # one of each per run
    assert {k for _, tool, k in keys if tool == "notify"} == set(by_thread)
    assert {k for _, tool, k in keys if tool == "refund"} == {
        r["idempotency_key"] for r in made["refunds"]
    }
