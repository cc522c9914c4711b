"""What the LangGraph clients send besides the SDK's usual requests, through a real
``waystone api`` and ``waystone worker``: a body posted as ``text/plain`` (LangGraph
Studio's) read as JSON, threads tagged with their graph as the reference tags them (so
the Agent Chat UI's sidebar finds them), and ``if_not_exists`` on a run."""

from __future__ import annotations

import httpx
import pytest
from langgraph_sdk.client import SyncLangGraphClient

from tests.conftest import wait_until
from tests.support.api import TOKEN, ApiSetup
from tests.support.chat import say, texts
from tests.support.graphs import ASSIST
from waystone.web import shapes

pytestmark = pytest.mark.slow


@pytest.fixture
def api_setup() -> ApiSetup:
    return ApiSetup({"WAYSTONE_GRAPHS": ASSIST})


def test_a_text_plain_body_is_read_as_json(api: str, lg: SyncLangGraphClient) -> None:
    headers = {"x-api-key": TOKEN, "content-type": "text/plain;charset=UTF-8"}
    with httpx.Client(base_url=api, headers=headers) as plain:
        made = plain.post("/threads", content='{"metadata": {"from": "studio"}}')
        assert made.status_code == 200, made.text
        assert made.json()["metadata"] == {"from": "studio"}
        found = plain.post("/assistants/search", content='{"graph_id": "assist"}')
        assert [a["graph_id"] for a in found.json()] == ["assist"]
        broken = plain.post("/threads/search", content="{not json")
        assert broken.status_code == 400
    assert lg.threads.get(made.json()["thread_id"])["metadata"] == {"from": "studio"}


def test_threads_carry_their_graph_in_their_metadata(lg: SyncLangGraphClient) -> None:
    tags = {"graph_id": "assist", "assistant_id": shapes.assistant_id("assist")}
    # made by its first run, as a stateless run's and if_not_exists="create"'s are
    made = lg.runs.create("t-made-by-run", "assist", input=say("hi"), if_not_exists="create")
    lg.runs.join("t-made-by-run", made["run_id"])
    assert lg.threads.get("t-made-by-run")["metadata"] == tags
    # made first, then run on: tagged by the run, its own metadata kept
    tid = lg.threads.create(metadata={"team": "a"})["thread_id"]
    lg.runs.wait(tid, "assist", input=say("hi"))
    assert lg.threads.get(tid)["metadata"] == {"team": "a", **tags}
    # made with a graph id, as threads.create(graph_id=...) sends it
    named = lg.threads.create(graph_id="assist")["thread_id"]
    assert lg.threads.get(named)["metadata"] == {"graph_id": "assist"}
    found = {t["thread_id"] for t in lg.threads.search(metadata={"graph_id": "assist"})}
    assert found == {"t-made-by-run", tid, named}

    with pytest.raises(httpx.HTTPStatusError) as missing:  # if_not_exists="reject", the default
        lg.runs.wait("t-nowhere", "assist", input=say("hi"))
    assert missing.value.response.status_code == 404
    assert (
        texts(lg.runs.wait("t-new", "assist", input=say("yo"), if_not_exists="create"))[0] == "yo"
    )


def test_cancel_with_rollback_takes_the_thread_back(lg: SyncLangGraphClient) -> None:
    tid = lg.threads.create()["thread_id"]
    lg.runs.wait(tid, "assist", input=say("hi"))
    asked = lg.runs.create(tid, "assist", input=say("refund?"))
    lg.runs.join(tid, asked["run_id"])  # it waits on its interrupt
    assert texts(lg.threads.get_state(tid)["values"]) == ["hi", "echo hi", "refund?"]
    with pytest.raises(httpx.HTTPStatusError) as wrong:
        lg.runs.cancel(tid, asked["run_id"], action="undo")  # type: ignore[arg-type]
    assert wrong.value.response.status_code == 422
    lg.runs.cancel(tid, asked["run_id"], action="rollback")
    assert texts(lg.threads.get_state(tid)["values"]) == ["hi", "echo hi"]
    assert len(lg.runs.list(tid)) == 1  # gone from the API, as the reference deletes it
    with pytest.raises(httpx.HTTPStatusError) as gone:
        lg.runs.get(tid, asked["run_id"])
    assert gone.value.response.status_code == 404
    assert texts(lg.runs.wait(tid, "assist", input=say("again")))[-1] == "echo again"


def test_cancel_many_names_the_runs_of_a_thread(lg: SyncLangGraphClient) -> None:
    tid = lg.threads.create()["thread_id"]
    asked = lg.runs.create(tid, "assist", input=say("refund?"))
    wait_until(lambda: lg.threads.get(tid)["status"] == "interrupted", "the run waits")
    assert lg.runs.join(tid, asked["run_id"])["__interrupt__"]  # joined once it waits
    with pytest.raises(httpx.HTTPStatusError) as by_status:
        lg.runs.cancel_many(status="running")
    assert by_status.value.response.status_code == 422
    lg.runs.cancel_many(thread_id=tid, run_ids=[asked["run_id"]])
    assert lg.runs.get(tid, asked["run_id"])["status"] == "interrupted"  # as a cancel shows it
