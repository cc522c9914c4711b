"""A thread stays usable after ``runs.cancel`` in the middle of a tool call, through the
official client (``langgraph-sdk``) against a real ``waystone api`` and a real ``waystone
worker``: ``create_react_agent`` with a fake tool-calling model, its booking call held at
a provider on loopback until the test lets it go."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph_sdk.client import SyncLangGraphClient

from tests.conftest import wait_until
from tests.support.api import ApiSetup
from tests.support.chat import say
from tests.support.stopped_agent import ANSWER, URL_VARIABLE, BookingDesk

GRAPH = "react=tests.support.stopped_agent:react_agent"


@pytest.fixture
def api_setup(desk: BookingDesk) -> ApiSetup:
    env = {"WAYSTONE_GRAPHS": GRAPH, URL_VARIABLE: desk.url}
    return ApiSetup(env, worker=("--concurrency", "2"))  # one slot stays in the held call


def tool_messages(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in values.get("messages", []) if m["type"] == "tool"]


def test_a_message_after_a_cancel_during_a_tool_call_completes(
    lg: SyncLangGraphClient, desk: BookingDesk
) -> None:
    thread_id = lg.threads.create()["thread_id"]
    run = lg.runs.create(thread_id, "react", input=say("book me a trip to Lisbon"))
    wait_until(lambda: desk.held() == 1, "the booking call at the provider")
    lg.runs.cancel(thread_id, run["run_id"])
    wait_until(
        lambda: lg.runs.get(thread_id, run["run_id"])["status"] == "interrupted", "the cancel"
    )

    answered = lg.runs.wait(thread_id, "react", input=say("thanks"))

    assert isinstance(answered, dict)
    said = [(m["type"], m["content"]) for m in answered["messages"]]
    assert said[-2:] == [("human", "thanks"), ("ai", ANSWER)]
    state = lg.threads.get_state(thread_id)
    [tool] = tool_messages(state["values"])
    assert (tool["tool_call_id"], tool["name"], tool["status"]) == ("call_book", "book", "error")
    assert "cancelled" in tool["content"]
    assert state["next"] == []
    # the thread's history shows the answer written as a checkpoint of its own, before
    # the new message
    history = lg.threads.get_history(thread_id, limit=100)
    answering = [
        h for h in history if h["metadata"]["source"] == "update" and tool_messages(h["values"])
    ]
    assert len(answering) == 1 and answering[0]["values"]["messages"][-1] == tool
    assert answering[0]["next"] == ["agent"]  # routed to the model, not the stopped tool
    assert [r["status"] for r in lg.runs.list(thread_id)] == ["success", "interrupted"]

    desk.release()  # the stopped call lands late; it is never made again
    wait_until(lambda: len(desk.bookings) == 1, "the held booking answered")
    assert len(desk.requests) == 1
