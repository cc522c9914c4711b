"""The committed stream modes made from a run's checkpoints (``waystone.web.stream``), as
the reference server sent them for the same graph (recorded in ``tests/unit/data``):
``checkpoints`` and ``tasks``, and the legacy ``messages`` of messages not streamed token
by token. The graph runs in this process on an in-memory checkpointer."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from tests.support import mode_graphs
from tests.support.stream_shapes import INPUT, shapes
from waystone.web import stream

RECORDED = Path(__file__).parent / "data" / "reference_stream_modes.json"
META = {"graph_id": "modes", "assistant_id": "a"}


def made(modes: tuple[str, ...]) -> list[stream.Event]:
    """The events of ``modes`` for a run of the modes graph, from its checkpoints."""
    graph = mode_graphs.builder.compile(checkpointer=InMemorySaver())
    config: dict[str, Any] = {"configurable": {"thread_id": str(uuid.uuid4())}}
    graph.invoke(INPUT, config)
    checkpoints = stream.run_checkpoints(iter(graph.get_state_history(config)), None)
    return stream.RunMaker(modes, META).add({}, checkpoints, stopped=False)


@pytest.mark.parametrize("mode", ["checkpoints", "tasks"])
def test_a_runs_checkpoints_and_tasks_are_as_the_reference_sent_them(mode: str) -> None:
    reference = json.loads(RECORDED.read_text())[f"{mode}|False"]
    events = made((mode,))
    assert shapes([(e.event, e.data) for e in events]) == reference
    assert [e.id for e in events] == sorted({e.id for e in events})  # sent in id order


def test_checkpoints_and_tasks_go_with_debug_in_the_references_order() -> None:
    events = made(("values", "checkpoints", "tasks", "debug"))
    kinds = [e.event if e.event != "debug" else f"debug {e.data['type']}" for e in events]
    assert kinds[:8] == [
        "checkpoints",  # the input's checkpoint
        "debug checkpoint",
        "values",
        "checkpoints",
        "debug checkpoint",
        "debug task",
        "tasks",
        "debug task_result",
    ]
    assert [e.id for e in events] == sorted({e.id for e in events})


def test_a_committed_message_is_sent_whole_in_the_legacy_mode() -> None:
    events = made(("messages",))
    assert [e.event for e in events] == ["messages/metadata", "messages/complete"] * 4
    for meta, message in zip(events[::2], events[1::2], strict=True):
        [(message_id, data)] = meta.data.items()
        assert message_id == message.data[0]["id"]
        assert data["metadata"]["graph_id"] == "modes"
    said = [(m.data[0]["type"], m.data[0]["content"]) for m in events[1::2]]
    assert said == [
        ("ai", "Looking it up"),
        ("tool", "42"),
        ("ai", "The answer is 42"),
        ("ai", "done"),
    ]
    assert [e.event for e in made(("messages", "messages-tuple"))] == ["messages"] * 4


def test_a_messages_metadata_is_its_nodes_as_the_reference_has_it() -> None:
    """A message a node returns (not a model's tokens): its metadata is the node's."""
    reference = json.loads(RECORDED.read_text())["messages-tuple|False"]
    events = made(("messages-tuple",))
    done = shapes([(events[-1].event, events[-1].data)])
    assert done == reference[-1:]  # the subgraph's message, as its node's (child) answer
    tool = shapes([(events[1].event, events[1].data)])[0][1][1]
    assert tool == reference[5][1][1]  # the ToolNode's message
