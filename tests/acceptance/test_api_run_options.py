"""A run's options through the official client against a real ``waystone api`` and real
``waystone worker``s: metadata kept (redacted) and shown, config and LangGraph's context
applied, breakpoints that stop the run ``interrupted`` until a run with no input goes on,
and all of them applied by the worker that takes the run over after a crash."""

from __future__ import annotations

import signal
from typing import Any

import httpx
import psycopg
import pytest
from langgraph_sdk.client import SyncLangGraphClient

from tests.acceptance.conftest import Workers
from tests.conftest import wait_until
from tests.support.api import ApiSetup

GRAPH = "steps=tests.support.option_graphs:two_steps"


@pytest.fixture
def api_setup() -> ApiSetup:
    return ApiSetup({"WAYSTONE_GRAPHS": GRAPH}, worker=None)


def worker(workers: Workers) -> Any:
    return workers.spawn(env={"WAYSTONE_GRAPHS": GRAPH})


def test_metadata_config_and_context(
    lg: SyncLangGraphClient, workers: Workers, sql: psycopg.Connection[Any]
) -> None:
    worker(workers)
    tid = lg.threads.create()["thread_id"]
    made = lg.runs.create(
        tid,
        "steps",
        input={"text": "hi"},
        metadata={"ticket": 7, "by": "ana@example.com"},
        config={"configurable": {"persona": "pirate"}, "recursion_limit": 5},
    )
    done = lg.runs.join(tid, made["run_id"])
    assert done["log"] == ["first: hi as pirate", "second: tone none"]
    shown = lg.runs.get(tid, made["run_id"])
    assert shown["metadata"]["ticket"] == 7
    assert shown["metadata"]["by"].startswith("<pii:")  # redacted as runs' input
    assert [r["metadata"]["ticket"] for r in lg.runs.list(tid)] == [7]
    stored = sql.execute("SELECT metadata::text FROM waystone.run_options").fetchall()
    assert stored and not any("ana@example.com" in row[0] for row in stored)

    # a recursion limit the graph's two steps exceed: the run ends in error
    plain = lg.runs.wait(tid, "steps", input={"text": "again"}, config={"recursion_limit": 1})
    assert lg.runs.list(tid)[0]["status"] == "error", plain
    toned = lg.runs.wait(None, "steps", input={"text": "hi"}, context={"tone": "dry"})
    assert toned["log"] == ["first: hi as none", "second: tone dry"]


def test_refused_options_change_nothing(
    lg: SyncLangGraphClient, sql: psycopg.Connection[Any]
) -> None:
    tid = lg.threads.create()["thread_id"]
    before = sql.execute("SELECT count(*) FROM waystone.runs").fetchone()
    asks = {
        "a node that is not the graph's": (400, {"interrupt_before": ["nowhere"]}),
        "Waystone's own configurable": (400, {"config": {"configurable": {"thread_id": "x"}}}),
        "a config key not applied": (422, {"config": {"tags": ["x"]}}),
        "configurable and context": (
            400,
            {"config": {"configurable": {"persona": "x"}}, "context": {"tone": "x"}},
        ),
        "stream_subgraphs": (422, {"stream_subgraphs": True}),
    }
    for what, (code, extra) in asks.items():
        with pytest.raises(httpx.HTTPStatusError) as refused:
            lg.runs.create(tid, "steps", input={"text": "x"}, **extra)
        assert refused.value.response.status_code == code, what
    assert sql.execute("SELECT count(*) FROM waystone.runs").fetchone() == before


def test_breakpoints_survive_a_worker_crash(lg: SyncLangGraphClient, workers: Workers) -> None:
    tid = lg.threads.create()["thread_id"]
    # made while no worker runs: the options live with the run, not in the API
    made = lg.runs.create(
        tid,
        "steps",
        input={"text": "hi"},
        interrupt_before=["second"],
        context={"tone": "dry"},
    )
    first = worker(workers)
    wait_until(lambda: lg.runs.get(tid, made["run_id"])["status"] == "interrupted", "breakpoint")
    state = lg.threads.get_state(tid)
    assert state["next"] == ["second"] and state["values"]["log"] == ["first: hi as none"]
    assert lg.threads.get(tid)["status"] == "interrupted"
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)

    worker(workers)  # another worker goes on, with the run's context
    # at a breakpoint the state may change, and the run goes on from it
    lg.threads.update_state(tid, {"text": "edited"})
    done = lg.runs.wait(tid, "steps", input=None)
    assert done["log"] == ["first: hi as none", "second: tone dry"]
    assert done["text"] == "edited"
    assert lg.runs.get(tid, made["run_id"])["status"] == "success"

    after = lg.runs.create(tid, "steps", input={"text": "two"}, interrupt_after=["first"])
    wait_until(lambda: lg.runs.get(tid, after["run_id"])["status"] == "interrupted", "stop")
    assert lg.threads.get_state(tid)["next"] == ["second"]
    resumed = lg.runs.wait(tid, "steps", command={"resume": "go on"})
    assert resumed["log"][-2:] == ["first: two as none", "second: tone none"]
