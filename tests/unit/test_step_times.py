"""The Send packets a step's tasks came from, named by node and position; a value that
cannot be read goes unnamed."""

from __future__ import annotations

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Send

from waystone._runs.step_times import send_nodes, send_targets


def _row(version: str, value: object, serde: JsonPlusSerializer) -> dict[str, object]:
    kind, blob = serde.dumps_typed(value)
    return {"thread_id": "t", "checkpoint_ns": "", "version": version, "type": kind, "blob": blob}


def test_each_send_is_named_by_its_position() -> None:
    serde = JsonPlusSerializer()
    rows = [
        _row("3", [Send("tools", {"a": 1}), Send("tools", {"a": 2}), Send("notify", None)], serde),
        _row("5", ["not a send", Send("tally", 1)], serde),
    ]

    assert send_targets(serde, rows) == [
        ("t", "", "3", 0, "tools"),
        ("t", "", "3", 1, "tools"),
        ("t", "", "3", 2, "notify"),
        ("t", "", "5", 1, "tally"),
    ]


def test_a_value_that_cannot_be_read_goes_unnamed() -> None:
    serde = JsonPlusSerializer()
    unreadable = {"thread_id": "t", "checkpoint_ns": "", "version": "4", "type": "msgpack"}
    rows = [{**unreadable, "blob": b"\xc1"}, _row("6", [Send("b", 1)], serde)]

    assert send_targets(serde, rows) == [("t", "", "6", 0, "b")]


def test_send_nodes_of_a_tasks_value() -> None:
    assert send_nodes([Send("a", {}), "not a send", Send("b", 1)]) == ["a", None, "b"]
    assert send_nodes(None) == []
