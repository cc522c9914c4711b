"""A thread's changes through the official client against a real ``waystone api`` and
``waystone worker``: metadata updated, state updated (and read at a checkpoint), a copy,
and a delete that keeps the run's evidence; each refused with 409 while a run is on."""

from __future__ import annotations

import json
from typing import Any

import httpx
import psycopg
import pytest
from langgraph_sdk.client import SyncLangGraphClient

from tests.conftest import Cli, wait_until
from tests.support.api import ApiSetup
from tests.support.chat import say, texts
from tests.support.graphs import ASSIST


@pytest.fixture
def api_setup() -> ApiSetup:
    return ApiSetup({"WAYSTONE_GRAPHS": ASSIST})


def refused(call: Any) -> int:
    with pytest.raises(httpx.HTTPStatusError) as error:
        call()
    return error.value.response.status_code


def test_update_metadata_and_state(lg: SyncLangGraphClient) -> None:
    tid = lg.threads.create(metadata={"team": "a", "tier": 1})["thread_id"]
    patched = lg.threads.update(tid, metadata={"tier": 2, "lang": "en"})
    assert patched["metadata"] == {"team": "a", "tier": 2, "lang": "en"}
    assert lg.threads.get(tid)["metadata"] == patched["metadata"]
    assert refused(lambda: lg.threads.update_state(tid, say("x"))) == 400  # no run, no graph

    lg.runs.wait(tid, "assist", input=say("hi"))
    first = lg.threads.get_state(tid)
    updated = lg.threads.update_state(tid, say("edited"), as_node="assist")
    assert updated["checkpoint"]["thread_id"] == tid
    now = lg.threads.get_state(tid)
    assert now["checkpoint"]["checkpoint_id"] == updated["checkpoint"]["checkpoint_id"]
    assert texts(now["values"]) == ["hi", "echo hi", "edited"]
    assert now["next"] == []  # as the node that last ran: nothing left to do

    at = first["checkpoint"]["checkpoint_id"]
    assert texts(lg.threads.get_state(tid, checkpoint_id=at)["values"]) == ["hi", "echo hi"]
    posted = lg.threads.get_state(tid, checkpoint={"checkpoint_id": at})
    assert posted["checkpoint"]["checkpoint_id"] == at

    # from an earlier checkpoint: a branch, the next run goes on from it
    lg.threads.update_state(tid, say("branch"), as_node="assist", checkpoint_id=at)
    assert texts(lg.threads.get_state(tid)["values"]) == ["hi", "echo hi", "branch"]
    again = lg.runs.wait(tid, "assist", input=say("bye"))
    assert texts(again) == ["hi", "echo hi", "branch", "bye", "echo bye"]


def test_a_thread_with_a_run_on_refuses_changes(lg: SyncLangGraphClient) -> None:
    tid = lg.threads.create()["thread_id"]
    asked = lg.runs.wait(tid, "assist", input=say("refund?"))
    assert asked["__interrupt__"]
    assert refused(lambda: lg.threads.update_state(tid, say("x"))) == 409
    assert refused(lambda: lg.threads.delete(tid)) == 409
    assert lg.threads.get(tid)["status"] == "interrupted"
    done = lg.runs.wait(tid, "assist", command={"resume": "yes"})
    assert texts(done)[-1] == "a person says: yes"


def test_copy_then_delete(lg: SyncLangGraphClient, cli: Cli, sql: psycopg.Connection[Any]) -> None:
    tid = lg.threads.create(metadata={"team": "a"})["thread_id"]
    lg.runs.wait(tid, "assist", input=say("hi"))
    copy = lg.threads.copy(tid)
    assert copy["thread_id"] != tid and copy["metadata"] == lg.threads.get(tid)["metadata"]
    assert copy["metadata"]["team"] == "a" and copy["metadata"]["graph_id"] == "assist"
    # the copy is a fork: its run is settled by a worker, with no node run again
    wait_until(lambda: lg.threads.get(copy["thread_id"])["status"] == "idle", "the copy settles")
    joined = lg.runs.wait(copy["thread_id"], "assist", input=say("more"))
    assert texts(joined) == ["hi", "echo hi", "more", "echo more"]
    assert texts(lg.threads.get_state(tid)["values"]) == ["hi", "echo hi"]

    lg.threads.delete(tid)
    assert refused(lambda: lg.threads.get(tid)) == 404
    assert refused(lambda: lg.runs.list(tid)) == 404
    assert tid not in {t["thread_id"] for t in lg.threads.search(limit=100)}
    assert refused(lambda: lg.threads.create(thread_id=tid)) == 409  # the id stays taken
    left = sql.execute("SELECT count(*) FROM checkpoints WHERE thread_id = %s", (tid,))
    assert left.fetchone() == (0,)
    history = cli("history", tid, "--json", env={"WAYSTONE_GRAPHS": ASSIST})
    assert [r["state"] for r in json.loads(history.stdout)["runs"]] == ["done"], history.stderr
    assert texts(lg.threads.get_state(copy["thread_id"])["values"])[:2] == ["hi", "echo hi"]
