"""The stream modes beyond values, updates and messages-tuple, through the official
client against a real ``waystone api`` and worker: ``debug`` (checkpoints, tasks and
their results, an interrupt and its answer), ``checkpoints`` and ``tasks`` and the legacy
``messages`` as ``langgraph dev`` sent them for the same graph (recorded in
``tests/unit/data``), a subgraph's events (``stream_subgraphs``), and the modes whose
events are not committed (``custom``, ``events``), refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from langgraph_sdk.client import SyncLangGraphClient

from tests.support.api import ApiSetup
from tests.support.chat import say
from tests.support.stream_shapes import INPUT, shapes

GRAPHS = (
    "assist=tests.support.graphs:assist_graph,nested=tests.support.stream_graphs:nested_graph,"
    "modes=tests.support.mode_graphs:modes_graph"
)
RECORDED = Path(__file__).parent.parent / "unit" / "data" / "reference_stream_modes.json"


@pytest.fixture
def api_setup() -> ApiSetup:
    return ApiSetup({"WAYSTONE_GRAPHS": GRAPHS})


def steps(parts: list[Any]) -> list[tuple[str, int, str | None]]:
    """Each debug event's type, step and task (None for a checkpoint)."""
    return [
        (p.data["type"], p.data["step"], p.data["payload"].get("name"))
        for p in parts
        if p.event == "debug"
    ]


def test_debug_shows_checkpoints_tasks_and_results(lg: SyncLangGraphClient) -> None:
    thread_id = lg.threads.create()["thread_id"]
    said = list(lg.runs.stream(thread_id, "assist", input=say("hi"), stream_mode="debug"))
    assert steps(said) == [
        ("checkpoint", -1, None),
        ("checkpoint", 0, None),
        ("task", 1, "assist"),
        ("task_result", 1, "assist"),
        ("checkpoint", 1, None),
    ]
    task, result, last = (p.data["payload"] for p in said[3:])
    assert task["triggers"] == ["branch:to:assist"]
    assert [m["content"] for m in task["input"]["messages"]] == ["hi"]
    assert result["id"] == task["id"] and result["error"] is None
    assert [m["content"] for m in result["result"]["messages"]] == ["echo hi"]
    assert last["next"] == [] and last["checkpoint"]["thread_id"] == thread_id
    assert last["metadata"]["step"] == 1 and last["parent_checkpoint"] is not None

    asked = list(lg.runs.stream(thread_id, "assist", input=say("ok?"), stream_mode="debug"))
    assert steps(asked)[-2:] == [("task", 4, "assist"), ("task_result", 4, "assist")]
    [pending] = asked[-1].data["payload"]["interrupts"]
    assert pending["value"] == {"question": "ok?"}
    answered = list(
        lg.runs.stream(thread_id, "assist", command={"resume": "yes"}, stream_mode="debug")
    )
    # the step it stopped at runs again, to its end
    assert steps(answered) == [
        ("checkpoint", 3, None),
        ("task", 4, "assist"),
        ("task_result", 4, "assist"),
        ("checkpoint", 4, None),
    ]
    result = answered[3].data["payload"]
    assert result["interrupts"] == [] and result["result"]["messages"][0]["content"] == (
        "a person says: yes"
    )


def test_a_subgraphs_events_are_streamed_with_its_namespace(lg: SyncLangGraphClient) -> None:
    thread_id = lg.threads.create()["thread_id"]
    modes = ["updates", "messages-tuple"]
    parts = list(
        lg.runs.stream(
            thread_id, "nested", input=say("hi"), stream_mode=modes, stream_subgraphs=True
        )
    )
    shown = [
        (p.event.split(":")[0], sorted(p.data) if p.event.startswith("updates") else None)
        for p in parts[1:]
    ]
    assert shown == [
        ("messages", None),
        ("updates", ["first"]),
        ("messages|child", None),
        ("updates|child", ["inner"]),
        ("updates", ["child"]),
    ]
    [inner] = [p for p in parts if p.event.startswith("updates|")]
    task_id = inner.event.split(":", 1)[1]
    state = lg.threads.get_history(thread_id, limit=100)
    child_tasks = [t for s in state for t in s["tasks"] if t["name"] == "child"]
    assert task_id in {t["id"] for t in child_tasks}  # the namespace names the subgraph's task
    said = [p.data[0]["content"] for p in parts if p.event.startswith("messages")]
    assert said == ["first of 1", "inner first of 1"]  # each message once, where it was made
    ids = [p.id for p in parts[1:]]
    assert ids == sorted(set(ids))
    run_id = parts[0].data["run_id"]
    joined = list(lg.runs.join_stream(thread_id, run_id, stream_mode=modes))
    assert [p.event for p in joined[1:]] == ["messages", "updates", "messages", "updates"]


def test_modes_whose_events_are_not_committed_are_refused(
    lg: SyncLangGraphClient, sql: psycopg.Connection[Any]
) -> None:
    thread_id = lg.threads.create()["thread_id"]
    for mode in ("custom", "events"):
        with pytest.raises(httpx.HTTPStatusError) as refused:
            list(lg.runs.stream(thread_id, "assist", input=say("hi"), stream_mode=[mode]))
        assert refused.value.response.status_code == 422
        assert "committed" in refused.value.response.json()["detail"]
    runs = sql.execute("SELECT count(*) FROM waystone.runs WHERE thread_id = %s", (thread_id,))
    assert runs.fetchone() == (0,)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["checkpoints", "tasks"])
def test_checkpoints_and_tasks_stream_as_the_reference_sent_them(
    lg: SyncLangGraphClient, mode: str
) -> None:
    reference = json.loads(RECORDED.read_text())
    for subgraphs in (True, False):
        thread_id = lg.threads.create()["thread_id"]
        parts = list(
            lg.runs.stream(
                thread_id, "modes", input=INPUT, stream_mode=mode, stream_subgraphs=subgraphs
            )
        )
        made = shapes([(p.event, p.data) for p in parts[1:]])
        expected = reference[f"{mode}|{subgraphs}"]
        assert [name for name, _ in made] == [name for name, _ in expected]
        assert made == expected


@pytest.mark.slow
def test_checkpoints_and_tasks_of_an_interrupt_and_its_answer(lg: SyncLangGraphClient) -> None:
    thread_id = lg.threads.create()["thread_id"]
    modes = ["checkpoints", "tasks"]
    asked = list(lg.runs.stream(thread_id, "assist", input=say("ok?"), stream_mode=modes))
    assert [(p.event, _step(p.data)) for p in asked[1:]] == [
        ("checkpoints", -1),
        ("checkpoints", 0),
        ("tasks", "assist"),
        ("tasks", "assist"),
    ]
    [pending] = asked[-1].data["interrupts"]
    assert pending["value"] == {"question": "ok?"} and asked[-1].data["result"] == {}
    answered = list(
        lg.runs.stream(thread_id, "assist", command={"resume": "yes"}, stream_mode=modes)
    )
    # as the reference: the checkpoint it stopped at, its task again, then its end
    assert [(p.event, _step(p.data)) for p in answered[1:]] == [
        ("checkpoints", 0),
        ("tasks", "assist"),
        ("tasks", "assist"),
        ("checkpoints", 1),
    ]
    result = answered[3].data
    assert result["interrupts"] == [] and result["error"] is None
    assert result["result"]["messages"][0]["content"] == "a person says: yes"
    joined = list(lg.runs.join_stream(thread_id, answered[0].data["run_id"], stream_mode=modes))
    assert [p.data for p in joined[-4:]] == [p.data for p in answered[1:]]


@pytest.mark.slow
def test_the_legacy_messages_mode_sends_each_committed_message_whole(
    lg: SyncLangGraphClient,
) -> None:
    thread_id = lg.threads.create()["thread_id"]
    parts = list(
        lg.runs.stream(
            thread_id, "modes", input=INPUT, stream_mode="messages", stream_subgraphs=True
        )
    )
    names = [p.event for p in parts[1:]]
    assert names == ["messages/metadata", "messages/complete"] * 4
    said = [p.data[0] for p in parts[1:] if p.event == "messages/complete"]
    assert [(m["type"], m["content"]) for m in said] == [
        ("ai", "Looking it up"),
        ("tool", "42"),
        ("ai", "The answer is 42"),
        ("ai", "done"),
    ]
    for meta, message in zip(parts[1::2], parts[2::2], strict=True):
        [(message_id, data)] = meta.data.items()
        assert message_id == message.data[0]["id"]
        assert data["metadata"]["langgraph_node"] in ("agent", "tools", "inner")
    other = lg.threads.create()["thread_id"]
    modes = ["messages", "messages-tuple"]
    both = list(lg.runs.stream(other, "modes", input=INPUT, stream_mode=modes))
    assert {p.event for p in both[1:]} == {"messages"}  # the tuples alone, as the reference


@pytest.mark.slow
def test_a_message_a_node_returns_has_the_nodes_metadata(lg: SyncLangGraphClient) -> None:
    """As the reference: the tool's message, and the subgraph's under its namespace."""
    reference = json.loads(RECORDED.read_text())["messages-tuple|True"]
    thread_id = lg.threads.create()["thread_id"]
    parts = list(
        lg.runs.stream(
            thread_id, "modes", input=INPUT, stream_mode="messages-tuple", stream_subgraphs=True
        )
    )
    made = shapes([(p.event, p.data) for p in parts[1:]])
    assert made[1] == reference[5] and made[1][1][0]["type"] == "tool"
    assert made[-1] == reference[-1] and made[-1][0].startswith("messages|child:")


def _step(data: dict[str, Any]) -> Any:
    """A checkpoint's step, or a task's name."""
    return data["metadata"]["step"] if "config" in data else data["name"]
