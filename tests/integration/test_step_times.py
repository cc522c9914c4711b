"""Step times name the nodes of the graph that ran: a ``create_react_agent`` whose model
calls two tools in one turn (two ``Send`` tasks to ``tools``), and a checkpointed subgraph
that sends one branch per part, on a real Postgres."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.support.react_graphs import trip_agent
from waystone import Runtime, Settings
from waystone.dashboard import snapshot, step_times
from waystone.examples.provider import ProviderProcess
from waystone.sql import query

ASK = {"messages": [{"role": "user", "content": "a trip to Lyon"}]}


@pytest.fixture
def trip(database_url: str) -> Iterator[tuple[Runtime, str]]:
    """A runtime with the trip agent, and a run of it done: interrupted, answered, ended."""
    with Runtime(Settings(database_url=database_url), graphs={"trip": trip_agent()}) as rt:
        asked = rt.invoke("trip", ASK)
        assert asked.state == "waiting" and len(asked.interrupts) == 1
        rt.resume(asked.thread_id, {"ok": True})
        assert rt.run(asked.thread_id).state == "done"
        yield rt, asked.thread_id


def _nodes(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    assert {r["graph"] for r in rows} == {"trip"}, rows
    return {r["node"]: r for r in rows}


def test_send_tasks_are_counted_under_their_own_node(trip: tuple[Runtime, str]) -> None:
    rt, thread_id = trip

    times = _nodes(snapshot(rt)["step_times"])

    assert list(times) == ["agent", "tools"]  # never the preset's "check"
    assert times["agent"]["n"] == 2  # the turn that called the tools, and the answer
    assert times["tools"]["n"] == 1  # both tool calls ran in one step
    for row in times.values():
        assert isinstance(row["mean_ms"], float) and isinstance(row["p95_ms"], float)
        assert 0 <= row["mean_ms"] < 60_000 and 0 <= row["p95_ms"] < 60_000  # milliseconds
    assert step_times(rt, thread_id) == snapshot(rt)["step_times"]


def test_a_thread_of_another_graph_is_not_counted_in_a_runs_own(
    trip: tuple[Runtime, str],
) -> None:
    rt, thread_id = trip
    other = rt.invoke("trip", ASK)
    assert other.state == "waiting"  # its agent step ran; its tools step waits

    assert _nodes(step_times(rt, other.thread_id))["agent"]["n"] == 1
    assert list(_nodes(step_times(rt, other.thread_id))) == ["agent"]
    assert _nodes(step_times(rt, thread_id))["agent"]["n"] == 2


def test_sends_of_a_graph_this_runtime_does_not_drive_are_counted_unnamed(
    trip: tuple[Runtime, str], database_url: str
) -> None:
    _, thread_id = trip
    with Runtime(Settings(database_url=database_url), graphs={}) as bare:
        times = _nodes(step_times(bare, thread_id))
    assert list(times) == ["agent", "(send)"]
    assert times["(send)"]["n"] == 1


def test_a_runs_step_times_are_read_by_index(
    trip: tuple[Runtime, str], sql: psycopg.Connection[Any]
) -> None:
    """With sequential scans priced out, the plan of one thread's step times and of its
    Send packets uses no sequential scan: every table is reached by its keys."""
    _, thread_id = trip
    version = sql.execute(
        "SELECT version FROM checkpoint_blobs WHERE thread_id = %s AND channel = %s LIMIT 1",
        (thread_id, "__pregel_tasks"),
    ).fetchone()
    assert version is not None
    sql.execute("SET enable_seqscan = off")
    plans = [
        sql.execute("EXPLAIN " + query("step_times_of_thread"), {"thread_id": thread_id}),
        sql.execute(
            "EXPLAIN " + query("send_targets"),
            {"thread_ids": [thread_id], "namespaces": [""], "versions": [version[0]]},
        ),
    ]
    for plan in plans:
        text = "\n".join(row[0] for row in plan.fetchall())
        assert "Seq Scan" not in text, text
        assert "Index" in text, text


def test_sends_inside_a_checkpointed_subgraph_are_named(
    database_url: str,
    provider: ProviderProcess,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fan-out graph's subgraph sends one ``branch`` per part, in its own namespace."""
    from tests.support import fanout

    del provider
    monkeypatch.setenv(fanout.MARKS, str(tmp_path / "marks"))
    graphs = {"fanout": fanout.fanout_graph()}
    with Runtime(Settings(database_url=database_url), graphs=graphs) as rt:
        done = rt.invoke("fanout", {"order_id": "o7"})
        assert done.state == "done"
        times = {r["node"]: r for r in step_times(rt, done.thread_id)}

    assert set(times) == {"intake", "plan", "branch", "tally", "refunds", "close"}
    assert times["branch"]["n"] == 1  # four branches, one step
    assert all(r["graph"] == "fanout" for r in times.values())
