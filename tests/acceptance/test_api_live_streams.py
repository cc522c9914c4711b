"""Live streams kept in Postgres, through ``waystone api`` and a real worker with the
official client: a model's tokens reach the client while its node runs, ``custom`` events
too, then the committed values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph_sdk.client import SyncLangGraphClient

from tests.conftest import wait_until
from tests.support.api import ApiSetup
from tests.support.live_graphs import ANSWER, ASKED, CUSTOM, GATE, GRAPH, MODES, tokens

pytestmark = pytest.mark.slow


@pytest.fixture
def api_setup(gates: Path) -> ApiSetup:
    return ApiSetup({"WAYSTONE_GRAPHS": GRAPH, "WAYSTONE_TEST_GATES": str(gates)})


def test_tokens_reach_the_client_while_the_node_runs(
    lg: SyncLangGraphClient, gates: Path, sql: psycopg.Connection[Any]
) -> None:
    thread_id = lg.threads.create()["thread_id"]
    parts: list[Any] = []
    held: list[Any] = []  # what the client had while the model was held
    for part in lg.runs.stream(thread_id, "live", input=ASKED, stream_mode=MODES):
        parts.append(part)
        if part.event == "messages" and not (gates / GATE).exists():
            held = list(parts)
            run = lg.runs.get(thread_id, parts[0].data["run_id"])
            assert run["status"] == "running"  # its node is held: it cannot have ended
            (gates / GATE).write_text("")
    assert [p.event for p in held] == ["metadata", "values", "custom", "messages"]
    assert held[2].data == CUSTOM
    assert "".join(p.data[0]["content"] for p in tokens(parts)) == ANSWER
    streamed = {p.data[0]["id"] for p in tokens(parts)}
    assert len(streamed) == 1
    assert [p.event for p in parts if p.event != "messages"][-1] == "values"
    final = parts[-1].data["messages"]
    assert [m["content"] for m in final] == ["hello", ANSWER]
    assert final[-1]["id"] in streamed  # the committed answer is the streamed one,
    assert len([p for p in parts if p.event == "messages"]) == len(tokens(parts))  # not sent again
    ids = [p.id for p in parts[1:]]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    logged = sql.execute(
        "SELECT count(*) FROM waystone.stream_events WHERE event = 'messages'"
    ).fetchone()
    assert logged == (len(tokens(parts)),)


def test_a_stream_that_cancels_on_disconnect_cancels_its_run(
    lg: SyncLangGraphClient, sql: psycopg.Connection[Any]
) -> None:
    thread_id = lg.threads.create()["thread_id"]
    stream = lg.runs.stream(
        thread_id, "live", input=ASKED, stream_mode=MODES, on_disconnect="cancel"
    )
    for part in stream:
        if part.event == "metadata":
            run_id = part.data["run_id"]
        if part.event == "messages":  # the model is held: the run is under way
            break
    stream.close()
    wait_until(
        lambda: lg.runs.get(thread_id, run_id)["status"] not in ("pending", "running"),
        "the run cancelled",
    )
    row = sql.execute("SELECT state, reason FROM waystone.runs WHERE thread_id = %s", (thread_id,))
    assert row.fetchone() == ("failed", "cancelled by api: its stream's client went away")
