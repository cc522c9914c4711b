"""The step times' arithmetic: nodes named, a node counted once per step, percentiles as
Postgres' ``percentile_cont``."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.types import Send

from waystone._step_times import UNKNOWN_SEND, percentile, send_nodes, summarize

V = "0003.0.1"


def _row(step: str, ms: float, node: str | None = None, send: int | None = None) -> dict[str, Any]:
    return {
        "graph": "g",
        "thread_id": "t",
        "checkpoint_ns": "",
        "checkpoint_id": step,
        "ms": ms,
        "node": node,
        "send_index": send,
        "tasks_version": V if send is not None else None,
    }


def test_send_tasks_are_named_by_their_packets_and_counted_once_per_step() -> None:
    rows = [
        _row("1", 2.0, node="__start__"),
        _row("2", 4.0, node="agent"),
        _row("3", 10.0, send=0),
        _row("3", 10.0, send=1),
        _row("3", 10.0, send=2),
        _row("4", 6.0, node="agent"),
    ]
    targets = {("t", "", V): ["tools", "tools", "notify"]}

    times = summarize(rows, targets)

    assert [(r["graph"], r["node"], r["n"]) for r in times] == [
        ("g", "agent", 2),
        ("g", "tools", 1),
        ("g", "notify", 1),
    ]
    assert times[0]["mean_ms"] == 5.0 and times[0]["p95_ms"] == pytest.approx(5.9)


def test_a_send_whose_packets_are_unread_is_counted_unnamed() -> None:
    times = summarize([_row("3", 1.0, send=0), _row("3", 1.0, send=5)], {("t", "", V): ["x"]})
    assert [(r["node"], r["n"]) for r in times] == [("x", 1), (UNKNOWN_SEND, 1)]
    assert summarize([_row("3", 1.0, send=0)], {})[0]["node"] == UNKNOWN_SEND


def test_send_nodes_of_a_tasks_value() -> None:
    assert send_nodes([Send("a", {}), "not a send", Send("b", 1)]) == ["a", None, "b"]
    assert send_nodes(None) == []


def test_percentile_interpolates_as_postgres() -> None:
    assert percentile([1.0], 0.95) == 1.0
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.95) == pytest.approx(4.8)
    assert percentile([5.0, 1.0], 0.5) == 3.0
    with pytest.raises(ValueError):
        percentile([], 0.5)
