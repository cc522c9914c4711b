"""Redaction and sealing keep every value LangGraph stores exactly as the stock saver
does: a DeltaChannel's snapshot stays a snapshot (so its state, its history and replays
match the stock saver's, and ``prune(keep_latest)`` still refuses its thread), and each
LangGraph value type is serialised to the same bytes as by the stock saver."""

from __future__ import annotations

import dataclasses
import enum
import operator
from collections import OrderedDict, deque
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Annotated, Any, NamedTuple, TypedDict
from uuid import UUID

import psycopg
import pydantic
import pytest
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Interrupt, Overwrite, Send
from psycopg.rows import dict_row

from tests.support.chain import chain
from tests.support.inside import parts
from waystone import Runtime
from waystone._checkpointing.saver import WaystoneSaver, make_saver
from waystone._privacy.keys import parse_key
from waystone._privacy.seal import TYPE, Sealer

STEPS = 7


class Point(NamedTuple):
    x: int
    label: str


def _extend(state: list[Any], writes: Sequence[list[Any]]) -> list[Any]:
    out = list(state)
    for w in writes:
        out.extend(w)
    return out


class State(TypedDict, total=False):
    items: Annotated[list[Any], DeltaChannel(_extend, snapshot_frequency=2)]
    notes: Annotated[list[str], operator.add]
    count: int
    point: Point


def _step(state: State) -> dict[str, Any]:
    n = state.get("count", 0) + 1
    return {
        "items": [{"n": n, "label": f"item {n}", "at": Point(n, f"p{n}")}],
        "notes": [f"note {n}"],
        "count": n,
        "point": Point(n, f"step {n}"),
    }


def _graph(saver: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("step", _step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", lambda s: "step" if s["count"] < STEPS else END)
    return builder.compile(checkpointer=saver)


@pytest.fixture
def stock(database_url: str) -> Iterator[PostgresSaver]:
    """The stock saver as it comes: what differs is redaction and sealing alone."""
    with psycopg.connect(
        database_url, autocommit=True, prepare_threshold=0, row_factory=dict_row
    ) as conn:
        yield PostgresSaver(conn)


def _ours(runtime: Runtime, sealed: bool) -> WaystoneSaver:
    sealer = Sealer(parse_key("5e" * 32)) if sealed else None
    return make_saver(parts(runtime).db, redact=parts(runtime).vault.redact, sealer=sealer)


def _history(graph: Any, thread: str) -> list[tuple[Any, Any, Any]]:
    config = {"configurable": {"thread_id": thread}}
    return [
        (s.values, s.next, s.metadata.get("step") if s.metadata else None)
        for s in graph.get_state_history(config)
    ]


@pytest.mark.parametrize("sealed", [False, True], ids=["redacting", "redacting+sealing"])
def test_redaction_keeps_the_delta_channel_snapshot(
    runtime: Runtime, stock: PostgresSaver, sealed: bool
) -> None:
    ours = _ours(runtime, sealed)
    theirs_graph, ours_graph = _graph(stock), _graph(ours)
    theirs_config: Any = {"configurable": {"thread_id": "stock"}}
    config: Any = {"configurable": {"thread_id": "ours"}}
    expected = theirs_graph.invoke({"count": 0}, theirs_config)
    assert ours_graph.invoke({"count": 0}, config) == expected
    assert [i["n"] for i in expected["items"]] == list(range(1, STEPS + 1))

    # read back: the channel is rebuilt from its latest snapshot and the writes after it
    assert ours_graph.get_state(config).values == theirs_graph.get_state(theirs_config).values
    assert _history(ours_graph, "ours") == _history(theirs_graph, "stock")

    # a replay from the middle of the history, on to the end
    middle = list(theirs_graph.get_state_history(theirs_config))[STEPS].config
    middle_ours = list(ours_graph.get_state_history(config))[STEPS].config
    assert ours_graph.invoke(None, middle_ours) == theirs_graph.invoke(None, middle)

    # keep_latest would drop the history the channel is rebuilt from: both refuse it
    with pytest.raises(NotImplementedError, match="DeltaChannel"):
        stock.prune(["stock"], strategy="keep_latest")
    with pytest.raises(NotImplementedError, match="DeltaChannel"):
        ours.prune(["ours"], strategy="keep_latest")
    assert _history(ours_graph, "ours") == _history(theirs_graph, "stock")


class Snapshots(TypedDict):
    items: Annotated[list[Any], DeltaChannel(_extend, snapshot_frequency=1)]


def _snapshots(saver: Any) -> Any:
    builder = StateGraph(Snapshots)
    builder.add_node("step", lambda state: {})
    builder.add_edge(START, "step")
    return builder.compile(checkpointer=saver)


@pytest.mark.parametrize("sealed", [False, True], ids=["redacting", "redacting+sealing"])
def test_keep_latest_refuses_a_thread_whose_delta_channel_only_snapshots(
    runtime: Runtime, stock: PostgresSaver, sealed: bool
) -> None:
    """A thread whose every checkpoint holds the channel's snapshot has no update counters
    in its metadata: its snapshots alone tell ``prune`` that it uses a DeltaChannel."""
    ours = _ours(runtime, sealed)
    for saver, thread in ((stock, "stock"), (ours, "ours")):
        config: Any = {"configurable": {"thread_id": thread}}
        for n in range(3):
            _snapshots(saver).update_state(config, {"items": [Point(n, f"p{n}")]}, as_node="step")
    history = list(_snapshots(stock).get_state_history({"configurable": {"thread_id": "stock"}}))
    assert len(history) == 3
    assert not any("counters_since_delta_snapshot" in (s.metadata or {}) for s in history)

    with pytest.raises(NotImplementedError, match="DeltaChannel"):
        stock.prune(["stock"], strategy="keep_latest")
    with pytest.raises(NotImplementedError, match="DeltaChannel"):
        ours.prune(["ours"], strategy="keep_latest")
    assert _history(_snapshots(ours), "ours") == _history(_snapshots(stock), "stock")


def _sum(total: int, writes: Sequence[int]) -> int:
    return total + sum(writes)


class Before(TypedDict):
    total: Annotated[int, operator.add]


class After(TypedDict):
    total: Annotated[int, DeltaChannel(_sum, int, snapshot_frequency=50)]


def _adder(state: Any) -> dict[str, int]:
    return {"total": 1}


def _counter(schema: Any, saver: Any) -> Any:
    builder = chain(schema, ("add", _adder))
    return builder.compile(checkpointer=saver)


@pytest.mark.parametrize("sealed", [False, True], ids=["redacting", "redacting+sealing"])
def test_a_channel_turned_delta_starts_from_its_stored_number(
    runtime: Runtime, stock: PostgresSaver, sealed: bool
) -> None:
    """A channel that held a number before it became a DeltaChannel is rebuilt from that
    number (kept inline by the stock saver, boxed in a sealed blob here)."""
    ours = _ours(runtime, sealed)
    for saver, thread in ((stock, "stock"), (ours, "ours")):
        config: Any = {"configurable": {"thread_id": thread}}
        _counter(Before, saver).invoke({"total": 10}, config)
        _counter(After, saver).invoke({"total": 5}, config)
    got = _counter(After, ours).get_state({"configurable": {"thread_id": "ours"}}).values
    expected = _counter(After, stock).get_state({"configurable": {"thread_id": "stock"}})
    assert expected.values == {"total": 17}
    assert got == expected.values


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass(frozen=True)
class Box:
    label: str
    items: list[str]


class Card(pydantic.BaseModel):
    name: str
    tags: list[str]


def _values() -> dict[str, Any]:
    """A value of every type LangGraph stores in a checkpoint, no personal data in any."""
    return {
        "snapshot": _DeltaSnapshot([{"a": "b"}, Point(1, "x")]),
        "point": Point(2, "y"),
        "tuple": (1, "two", 3.0),
        "set": {"a", "b"},
        "frozenset": frozenset({"c"}),
        "deque": deque(["d"], maxlen=3),
        "bytes": b"\x00\x01",
        "bytearray": bytearray(b"ab"),
        "when": datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
        "uuid": UUID("12345678-1234-5678-1234-567812345678"),
        "decimal": Decimal("1.20"),
        "enum": Color.RED,
        "dataclass": Box("x", ["y"]),
        "model": Card(name="n", tags=["t"]),
        "messages": [
            SystemMessage("be brief"),
            HumanMessage("hi"),
            AIMessage("", tool_calls=[{"name": "t", "args": {"x": "y"}, "id": "call_1"}]),
            ToolMessage("done", tool_call_id="call_1"),
        ],
        "document": Document(page_content="p", metadata={"k": "v"}),
        "ordered": OrderedDict(a=1, b="c"),
        "sends": [Send("node", {"x": "y"}, timeout=5)],
        "command": Command(update={"a": "b"}, goto=[Send("n", {"c": "d"})], resume="r"),
        "overwrite": Overwrite(["v"]),
        "interrupt": Interrupt("question", id="abc", response_schema={"type": "string"}),
        "barrier": ({"a", "b"}, True),
        "nested": {"deep": [Point(3, "z"), {"s": {"x"}}]},
        "text": "plain",
        "number": 3,
        "flag": True,
        "none": None,
    }


def _writes() -> list[tuple[str, Any]]:
    return [
        ("items", Overwrite(["w"])),
        ("__pregel_tasks", Send("node", {"x": "y"}, timeout=5)),
        ("__error__", KeyError("missing")),
        ("__interrupt__", [Interrupt("question", id="abc", response_schema={"type": "string"})]),
        ("__resume__", {"abc": "yes"}),
        ("command", Command(update={"a": "b"}, goto="n")),
        ("point", Point(4, "w")),
    ]


def _save(saver: Any, thread: str) -> Any:
    checkpoint = empty_checkpoint()
    checkpoint["id"] = "1ef4f797-8335-6428-8001-8a1503f9b875"
    checkpoint["channel_values"] = _values()
    checkpoint["channel_versions"] = {k: "1" for k in checkpoint["channel_values"]}
    config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    meta: Any = {"source": "loop", "step": 1, "parents": {}}
    saved = saver.put(config, checkpoint, meta, dict(checkpoint["channel_versions"]))
    saver.put_writes(saved, _writes(), "task-1")
    return saver.get_tuple(saved)


def _rows(sql: psycopg.Connection[Any], thread: str, sealer: Sealer | None) -> dict[str, Any]:
    """A thread's stored blobs and writes, opened: (type, bytes) by channel."""
    blobs = sql.execute(
        "SELECT channel, type, blob FROM checkpoint_blobs WHERE thread_id = %s", (thread,)
    ).fetchall()
    writes = sql.execute(
        "SELECT channel, idx, type, blob FROM checkpoint_writes WHERE thread_id = %s", (thread,)
    ).fetchall()

    def opened(kind: str, blob: bytes | None) -> tuple[str, bytes | None]:
        if sealer is None or not kind.startswith(TYPE) or blob is None:
            return kind, blob
        return kind[len(TYPE) :], sealer.open_bytes(blob)

    out = {f"blob {channel}": opened(kind, blob) for channel, kind, blob in blobs}
    out |= {f"write {channel} {idx}": opened(kind, blob) for channel, idx, kind, blob in writes}
    return out


@pytest.mark.parametrize("sealed", [False, True], ids=["redacting", "redacting+sealing"])
def test_redaction_keeps_every_langgraph_value_type(
    runtime: Runtime, stock: PostgresSaver, sql: psycopg.Connection[Any], sealed: bool
) -> None:
    ours = _ours(runtime, sealed)
    expected, got = _save(stock, "stock"), _save(ours, "ours")
    for name, value in expected.checkpoint["channel_values"].items():
        mine = got.checkpoint["channel_values"][name]
        assert (name, repr(mine)) == (name, repr(value))
        assert mine == value
    assert repr(got.pending_writes) == repr(expected.pending_writes)

    # stored as the same bytes (beneath the seal): the classes a blob names included
    theirs_rows, our_rows = _rows(sql, "stock", None), _rows(sql, "ours", ours._sealer)
    boxed = {f"blob {k}" for k in ("text", "number", "flag")}  # inline for the stock saver
    assert set(our_rows) - set(theirs_rows) == (boxed if sealed else set())
    for key, stored in theirs_rows.items():
        assert (key, our_rows[key]) == (key, stored)


def test_personal_data_inside_every_value_type_is_redacted(
    runtime: Runtime, sql: psycopg.Connection[Any]
) -> None:
    email = "ana@example.com"
    token = parts(runtime).vault.token_for("email", email)
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {
        "messages": [HumanMessage(f"write to {email}"), AIMessage("", name=email)],
        "snapshot": _DeltaSnapshot([email]),
        "point": Point(1, email),
        "set": {email},
        "box": Box(email, [email]),
        "card": Card(name=email, tags=[email]),
        "document": Document(page_content=email),
    }
    checkpoint["channel_versions"] = {k: "1" for k in checkpoint["channel_values"]}
    config: Any = {"configurable": {"thread_id": "pii", "checkpoint_ns": ""}}
    meta: Any = {"source": "loop", "step": 1, "parents": {}}
    saved = parts(runtime).saver.put(config, checkpoint, meta, dict(checkpoint["channel_versions"]))
    asked = Interrupt({"to": email}, id="abc")
    writes = [("__interrupt__", [asked]), ("__pregel_tasks", Send("node", email))]
    parts(runtime).saver.put_writes(saved, writes, "task-1")
    parts(runtime).saver.put_writes(saved, [("__error__", KeyError(email))], "task-2")

    for table in ("checkpoint_blobs", "checkpoint_writes"):
        rows = sql.execute(f"SELECT blob FROM {table} WHERE thread_id = 'pii'").fetchall()
        assert len(rows) > 1 and not any(email.encode() in bytes(r[0]) for r in rows), table
    found = parts(runtime).saver.get_tuple(saved)
    assert found is not None
    values = found.checkpoint["channel_values"]
    assert values["messages"] == [HumanMessage(f"write to {token}"), AIMessage("", name=token)]
    assert values["snapshot"] == _DeltaSnapshot([token])
    assert values["set"] == {token}
    assert values["document"] == Document(page_content=token)
    assert values["box"] == Box(token, [token])  # a class of its own, as the stock saver loads it
    writes_back = {channel: value for _, channel, value in found.pending_writes}
    assert writes_back["__interrupt__"] == [Interrupt({"to": token}, id="abc")]
    assert writes_back["__pregel_tasks"] == Send("node", token)
    assert writes_back["__error__"] == repr(KeyError(token))
