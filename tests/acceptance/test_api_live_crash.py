"""A worker SIGKILLed while its model streams: the stream names the attempt it abandoned
before the retried step's tokens, and a client reconnecting to another API server with
``Last-Event-ID`` misses no event and gets none twice (asserted over every event id)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from tests.acceptance.conftest import Workers
from tests.conftest import Cli
from tests.support.api import TOKEN, ApiSetup, api_server
from tests.support.live_graphs import ANSWER, ASKED, CUSTOM, GATE, GRAPH, MODES, tokens

pytestmark = pytest.mark.slow


@pytest.fixture
def api_setup(gates: Path) -> ApiSetup:
    """Its workers are the test's."""
    env = {"WAYSTONE_GRAPHS": GRAPH, "WAYSTONE_TEST_GATES": str(gates)}
    return ApiSetup(env, worker=None)


def test_a_worker_killed_mid_answer_leaves_an_abandoned_attempt_and_no_gap(
    lg: SyncLangGraphClient,
    workers: Workers,
    cli: Cli,
    api_setup: ApiSetup,
    gates: Path,
    sql: psycopg.Connection[Any],
) -> None:
    killed = workers.spawn("--lease-seconds", "2", env=api_setup.env)
    thread_id = lg.threads.create()["thread_id"]
    first: list[Any] = []
    stream = lg.runs.stream(thread_id, "live", input=ASKED, stream_mode=MODES)
    for part in stream:
        first.append(part)
        if len(tokens(first)) == 2:  # the model holds here
            break
    killed.kill()  # SIGKILL, mid-answer
    assert killed.wait() == -9
    stream.close()  # the client goes away too (the run goes on: on_disconnect "continue")
    run_id, last = first[0].data["run_id"], first[-1].id
    (gates / GATE).write_text("")
    workers.spawn(env=api_setup.env)  # takes the run over once the lease has lapsed

    with (
        api_server({**cli.env, **api_setup.env, "WAYSTONE_API_TOKEN": TOKEN}) as url,
        get_sync_client(url=url, api_key=TOKEN) as other,
    ):
        rest = list(
            other.runs.join_stream(thread_id, run_id, stream_mode=MODES, last_event_id=last)
        )
        whole_b = list(other.runs.join_stream(thread_id, run_id, stream_mode=MODES))
    whole_a = list(lg.runs.join_stream(thread_id, run_id, stream_mode=MODES))

    parts = first[1:] + rest[1:]  # after each stream's metadata
    ids = [p.id for p in parts]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)  # in order, none twice
    assert [p.id for p in whole_a[1:]] == ids == [p.id for p in whole_b[1:]]  # none missed
    assert [p.data for p in whole_a[1:]] == [p.data for p in parts]

    abandoned = [k for k, p in enumerate(parts) if p.event == "waystone/abandoned"]
    assert len(abandoned) == 1
    said = parts[abandoned[0]].data
    before, after = tokens(parts[: abandoned[0]]), tokens(parts[abandoned[0] :])
    assert said["attempts"] == [1] and said["message_ids"] == [before[0].data[0]["id"]]
    assert "".join(p.data[0]["content"] for p in before) == "tokens "  # the partial answer
    assert "".join(p.data[0]["content"] for p in after) == ANSWER  # the retried step's
    assert {p.data[0]["id"] for p in after} != {before[0].data[0]["id"]}
    assert [p.data for p in parts if p.event == "custom"] == [CUSTOM, CUSTOM]
    values = [p.data["messages"] for p in parts if p.event == "values"]
    assert [[m["content"] for m in v] for v in values] == [["hello"], ["hello", ANSWER]]
    assert values[-1][-1]["id"] == after[0].data[0]["id"]
    attempts = sql.execute(
        "SELECT DISTINCT attempt FROM waystone.stream_events ORDER BY attempt"
    ).fetchall()
    assert attempts == [(1,), (2,)]
