"""Step times name the nodes of the graph that ran: a ``create_react_agent`` whose model
calls two tools in one turn (two ``Send`` tasks to ``tools``), and a checkpointed subgraph
that sends one branch per part, on a real Postgres."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.support.chain import chain
from tests.support.react_graphs import trip_agent
from waystone import Runtime, Settings
from waystone._runs import step_times as _step_times
from waystone._runs.dashboard import shown_node, snapshot, step_times
from waystone._runs.step_times import UNKNOWN_SEND
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
    assert {r["parent"] for r in rows} == {None}, rows
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


def test_sends_of_a_graph_this_runtime_does_not_drive_are_named(
    trip: tuple[Runtime, str], database_url: str
) -> None:
    """Every graph is checkpointed with the runtime saver, so its serde reads any graph's
    Send packets: a server that does not drive the graph names them too."""
    _, thread_id = trip
    with Runtime(Settings(database_url=database_url), graphs={}) as bare:
        times = _nodes(step_times(bare, thread_id))
    assert list(times) == ["agent", "tools"]
    assert times["tools"]["n"] == 1


def test_sends_beyond_the_packets_read_are_counted_unnamed(
    trip: tuple[Runtime, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The packets read are bounded (the newest first): an older Send step goes unnamed."""
    rt, thread_id = trip
    newer = rt.invoke("trip", ASK)
    rt.resume(newer.thread_id, {"ok": True})
    assert rt.run(newer.thread_id).state == "done"
    monkeypatch.setattr(_step_times, "SEND_PACKETS_READ", 1)

    times = _nodes(snapshot(rt)["step_times"])

    assert list(times) == ["agent", UNKNOWN_SEND, "tools"]  # in the order they first ran
    assert (times["agent"]["n"], times["tools"]["n"], times[UNKNOWN_SEND]["n"]) == (4, 1, 1)
    assert list(_nodes(step_times(rt, newer.thread_id))) == ["agent", "tools"]


def _plan(sql: psycopg.Connection[Any], name: str, params: dict[str, Any]) -> str:
    rows = sql.execute("EXPLAIN " + query(name), params).fetchall()
    return "\n".join(row[0] for row in rows)


def test_a_runs_step_times_are_read_by_index(
    trip: tuple[Runtime, str], sql: psycopg.Connection[Any]
) -> None:
    """With sequential scans priced out, the plan of one thread's step times and of its
    Send packets uses no sequential scan: every table is reached by its keys, the claim
    that resumed a step by the index of such claims (not every event of the thread)."""
    _, thread_id = trip
    sql.execute("SET enable_seqscan = off")
    sends = {
        "send_threads": [thread_id],
        "send_namespaces": [""],
        "send_versions": ["v"],
        "send_positions": [0],
        "send_nodes": ["tools"],
    }
    times = _plan(sql, "step_times_of_thread", {"thread_id": thread_id, **sends})
    packets = _plan(sql, "send_packets_of_thread", {"thread_id": thread_id, "limit": 5})
    for plan in (times, packets):
        assert "Seq Scan" not in plan, plan
        assert "Index" in plan, plan
    assert "run_events_resumed_idx" in times, times
    assert "run_events_thread_idx" not in times, times


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
        times = {(r["parent"], r["node"]): r for r in step_times(rt, done.thread_id)}

    assert set(times) == {
        (None, "intake"),
        ("refunds", "plan"),
        ("refunds", "branch"),
        ("refunds", "tally"),
        (None, "refunds"),
        (None, "close"),
    }
    assert times["refunds", "branch"]["n"] == 1  # four branches, one step
    assert all(r["graph"] == "fanout" for r in times.values())


def _supervisor() -> Any:
    """A supervisor whose own ``agent`` node hands over to a ``create_react_agent`` (whose
    node is called ``agent`` too), run as a subgraph under the node ``helper``."""
    import warnings

    from langchain_core.messages import AIMessage
    from langgraph.graph import MessagesState
    from langgraph.prebuilt import create_react_agent
    from langgraph.warnings import LangGraphDeprecatedSinceV10

    from tests.support.chat_models import ConversationModel
    from tests.support.react_graphs import lookup

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
        helper = create_react_agent(ConversationModel(responses=[AIMessage("done")]), [lookup])
    return chain(
        MessagesState,
        ("agent", lambda state: {"messages": [AIMessage("over to the helper")]}),
        ("helper", helper),
    )


def test_a_subgraphs_nodes_are_not_merged_with_the_parents_of_the_same_name(
    database_url: str,
) -> None:
    with Runtime(Settings(database_url=database_url), graphs={"boss": _supervisor()}) as rt:
        done = rt.invoke("boss", ASK)
        assert done.state == "done"
        rows = snapshot(rt)["step_times"]

    assert [(r["parent"], r["node"], r["n"]) for r in rows] == [
        (None, "agent", 1),
        ("helper", "agent", 1),
        (None, "helper", 1),
    ]
    assert [shown_node(r) for r in rows] == ["agent", "helper › agent", "helper"]
