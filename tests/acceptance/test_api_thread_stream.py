"""A thread's stream across its runs (``threads.join_stream``) through the official
client against a real ``waystone api`` and ``waystone worker``: joined with the id of
the last event a client saw of one run, it gets every run after it, then each new run
as it runs, until the client goes."""

from __future__ import annotations

import threading

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.schema import StreamPart

from tests.conftest import wait_until
from tests.support.api import TOKEN, ApiSetup

pytestmark = pytest.mark.slow


@pytest.fixture
def api_setup() -> ApiSetup:
    return ApiSetup({"WAYSTONE_GRAPHS": "steps=tests.support.option_graphs:two_steps"})


def logs(parts: list[StreamPart]) -> list[list[str]]:
    """The thread's log in each values event (it grows by two lines a run)."""
    return [p.data["log"] for p in parts if p.event == "values"]


def test_a_thread_s_stream_follows_its_runs(api: str, lg: SyncLangGraphClient) -> None:
    tid = lg.threads.create()["thread_id"]
    first = list(lg.runs.stream(tid, "steps", input={"text": "one"}))
    seen = first[-1].id
    assert seen is not None
    second = lg.runs.wait(tid, "steps", input={"text": "two"})

    got: list[StreamPart] = []

    def follow() -> None:
        with get_sync_client(url=api, api_key=TOKEN) as client:
            for part in client.threads.join_stream(tid, last_event_id=seen):
                got.append(part)
                if any(len(log) == 6 for log in logs(got)):
                    return  # the third run's end

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    wait_until(lambda: second["log"] in logs(got), "the run after the last event seen")
    assert all(len(log) >= 2 for log in logs(got))  # nothing of the first run again
    third = lg.runs.create(tid, "steps", input={"text": "three"})  # while it follows
    follower.join(timeout=120)
    assert logs(got)[-1] == [*second["log"], "first: three as none", "second: tone none"]
    runs = [p.data["run_id"] for p in got if p.event == "metadata"]
    assert len(runs) == 2 and runs[-1] == third["run_id"]
    ids = [p.id for p in got if p.event != "metadata"]  # a client keeps the last id
    assert ids == sorted(set(ids)) and all(
        i is not None and i > seen for i in ids
    )  # each once, in order


def test_a_thread_s_stream_takes_the_reference_s_modes(api: str, lg: SyncLangGraphClient) -> None:
    tid = lg.threads.create()["thread_id"]
    headers = {"x-api-key": TOKEN}
    with httpx.Client(base_url=api, headers=headers) as http:
        bad = http.get(f"/threads/{tid}/stream", params={"stream_modes": "everything"})
        assert bad.status_code == 422
        assert http.get("/threads/t-none/stream").status_code == 404
