"""``WaystoneSaver`` built by hand, as LangGraph's ``PostgresSaver`` is: from a connection
string, a connection or a pool, ``setup()`` on an empty database, a user's own state types
read back as themselves (redacted and sealed on the way in), and plain LangGraph threads
that no Waystone run owns."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import operator
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

import psycopg
import pydantic
import pytest
from langchain_core.agents import AgentAction
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

import waystone
from tests.conftest import ROOT
from tests.support.chain import chain
from tests.support.inside import parts
from tests.support.scan import assert_sealed
from waystone import BadInput, Runtime, Settings, WaystoneSaver

EMAIL = "ana.lopez@example.com"


class Order(pydantic.BaseModel):
    order_id: str
    email: str


@dataclasses.dataclass
class Parcel:
    weight_g: int
    label: str


class State(TypedDict, total=False):
    order: Order
    parcel: Parcel
    action: AgentAction
    answer: str
    notes: Annotated[list[str], operator.add]


def _gather(state: State) -> dict[str, Any]:
    return {
        "order": Order(order_id="1001", email=EMAIL),
        "parcel": Parcel(weight_g=1200, label=f"to {EMAIL}"),
        "action": AgentAction(tool="refund", tool_input={"email": EMAIL}, log="refund it"),
        "notes": ["gathered"],
    }


def _ask(state: State) -> dict[str, Any]:
    answer = interrupt({"question": "refund?", "order": state["order"].order_id})
    return {"answer": answer, "notes": ["asked"]}


def _typed_graph(saver: Any) -> Any:
    builder = chain(State, ("gather", _gather), ("ask", _ask))
    return builder.compile(checkpointer=saver)


class Count(TypedDict, total=False):
    n: int
    seen: Annotated[list[str], operator.add]


def _counting_graph(saver: Any) -> Any:
    builder = StateGraph(Count)
    builder.add_node("bump", lambda s: {"n": s.get("n", 0) + 1, "seen": [f"step {s.get('n', 0)}"]})
    builder.add_edge(START, "bump")
    builder.add_conditional_edges("bump", lambda s: "bump" if s["n"] < 3 else END)
    return builder.compile(checkpointer=saver)


def _history(graph: Any, thread: str) -> list[tuple[Any, Any, Any]]:
    config = {"configurable": {"thread_id": thread}}
    return [(s.values, s.next, s.metadata["step"]) for s in graph.get_state_history(config)]


def _assert_typed(values: dict[str, Any]) -> None:
    assert type(values["order"]) is Order
    assert type(values["parcel"]) is Parcel
    assert type(values["action"]) is AgentAction
    # redacted on the way in: a token in place of the address, in each type
    assert values["order"].email.startswith("<pii:email:")
    assert EMAIL not in values["parcel"].label and "<pii:email:" in values["parcel"].label
    assert values["action"].tool_input["email"].startswith("<pii:email:")


def test_waystone_saver_is_exported_from_the_package() -> None:
    from waystone._checkpointing.saver import WaystoneSaver as Home

    assert waystone.WaystoneSaver is Home
    assert "WaystoneSaver" in waystone.__all__


def test_from_conn_string_sets_up_an_empty_database_and_runs_as_the_stock_saver(
    empty_database_url: str,
) -> None:
    with WaystoneSaver.from_conn_string(empty_database_url) as saver:
        saver.setup()
        saver.setup()  # idempotent
        ours = _counting_graph(saver)
        result = ours.invoke({"n": 0}, {"configurable": {"thread_id": "t-1"}})
        history = _history(ours, "t-1")
    with PostgresSaver.from_conn_string(empty_database_url) as stock:
        theirs = _counting_graph(stock)
        assert theirs.invoke({"n": 0}, {"configurable": {"thread_id": "t-2"}}) == result
        assert _history(theirs, "t-2") == history
    assert result == {"n": 3, "seen": ["step 0", "step 1", "step 2"]}
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        fences = conn.execute(
            "SELECT count(*) FROM pg_trigger WHERE tgname = 'waystone_fence'"
        ).fetchone()
        runs = conn.execute("SELECT to_regclass('waystone.runs') IS NOT NULL").fetchone()
    assert fences == (3,) and runs == (True,)  # Waystone's schema and its fence, too
    with WaystoneSaver.from_conn_string(empty_database_url) as again:  # another process
        assert _counting_graph(again).get_state({"configurable": {"thread_id": "t-1"}}).values == (
            result
        )


def _check_typed_run(saver: WaystoneSaver, database_url: str) -> None:
    graph = _typed_graph(saver)
    config: Any = {"configurable": {"thread_id": "typed"}}
    graph.invoke({"notes": []}, config)
    waiting = graph.get_state(config)
    assert waiting.next == ("ask",)
    assert waiting.tasks[0].interrupts[0].value == {"question": "refund?", "order": "1001"}
    _assert_typed(waiting.values)

    done = graph.invoke(Command(resume="yes"), config)
    _assert_typed(done)
    assert done["answer"] == "yes" and done["notes"] == ["gathered", "asked"]
    _assert_typed(graph.get_state(config).values)
    history = list(graph.get_state_history(config))
    with_order = [s for s in history if "order" in s.values]
    assert len(with_order) == 2  # after gather, after ask
    for snapshot in with_order:
        _assert_typed(snapshot.values)

    with psycopg.connect(database_url, autocommit=True) as conn:
        kinds = "SELECT DISTINCT type FROM checkpoint_blobs WHERE thread_id = 'typed'"
        assert_sealed(conn, kinds, [EMAIL])


def test_a_users_state_types_come_back_redacted_and_sealed(database_url: str, sealed: None) -> None:
    with WaystoneSaver.from_conn_string(
        database_url, allowed_modules=[Order, Parcel, ("langchain_core.agents", "AgentAction")]
    ) as saver:
        saver.setup()
        _check_typed_run(saver, database_url)


def test_a_module_declared_in_the_environment_allows_its_classes(
    database_url: str, sealed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WAYSTONE_ALLOWED_MODULES", f"{__name__}, langchain_core.agents:AgentAction")
    with psycopg.connect(database_url, autocommit=True, row_factory=dict_row) as conn:
        saver = WaystoneSaver(conn)
        _check_typed_run(saver, database_url)


def test_the_runtimes_saver_allows_the_classes_of_waystone_allowed_modules(
    database_url: str, sealed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WAYSTONE_ALLOWED_MODULES", f"{__name__},langchain_core.agents")
    with Runtime(Settings.from_env(database_url=database_url)) as rt:
        _check_typed_run(parts(rt).saver, database_url)


def test_a_users_types_come_back_with_no_option_set(database_url: str, sealed: None) -> None:
    """As with the stock saver: no allowlist to declare for a user's own classes."""
    with WaystoneSaver.from_conn_string(database_url) as saver:
        _check_typed_run(saver, database_url)


STRICT_RUN = """
import json, sys
from typing import Any
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from tests.integration.test_public_saver import Order, _typed_graph
from waystone import WaystoneSaver

url = sys.argv[1]
found = {}
with WaystoneSaver.from_conn_string(url) as ours, PostgresSaver.from_conn_string(url) as stock:
    for name, saver in (("ours", ours), ("stock", stock)):
        graph = _typed_graph(saver)
        config: Any = {"configurable": {"thread_id": "strict-" + name}}
        graph.invoke({"notes": []}, config)
        values = graph.get_state(config).values
        found[name] = {k: type(v).__name__ for k, v in values.items()}
        # a class no graph declares, put and read back by the saver alone
        put: Any = {"configurable": {"thread_id": "bare-" + name, "checkpoint_ns": ""}}
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"x": Order(order_id="1", email="a")}
        checkpoint["channel_versions"] = {"x": 1}
        saved = saver.put(put, checkpoint, {"source": "input", "step": -1}, {"x": 1})
        loaded = saver.get_tuple(saved).checkpoint["channel_values"]["x"]
        found[name + "-bare"] = type(loaded).__name__
print(json.dumps(found))
"""


def test_in_strict_mode_a_users_types_load_as_on_the_stock_saver(database_url: str) -> None:
    """``LANGGRAPH_STRICT_MSGPACK`` (read when LangGraph is imported): a graph's state types
    still load (LangGraph widens the saver by them), any other class as plain data."""
    env = {**os.environ, "LANGGRAPH_STRICT_MSGPACK": "true"}
    done = subprocess.run(
        [sys.executable, "-c", STRICT_RUN, database_url],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["ours"] == found["stock"]
    assert found["ours"]["order"] == "Order" and found["ours"]["action"] == "AgentAction"
    assert found["ours-bare"] == found["stock-bare"] == "dict"


@pytest.fixture
def pool(database_url: str) -> Iterator[ConnectionPool[Any]]:
    with ConnectionPool(
        database_url, kwargs={"autocommit": True, "row_factory": dict_row}, open=True
    ) as made:
        yield made


def test_a_plain_thread_on_a_pool_runs_as_on_the_stock_saver(
    pool: ConnectionPool[Any], database_url: str
) -> None:
    saver = WaystoneSaver(pool)
    ours = _counting_graph(saver)
    result = ours.invoke({"n": 0}, {"configurable": {"thread_id": "plain"}})
    assert result == {"n": 3, "seen": ["step 0", "step 1", "step 2"]}
    assert [h[2] for h in _history(ours, "plain")] == [3, 2, 1, 0, -1]
    with psycopg.connect(database_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM waystone.runs").fetchone() == (0,)
    assert not pool.closed  # the caller's


def test_a_plain_thread_passes_the_runtimes_fence(runtime: Runtime) -> None:
    """The fence refuses an untokened write only for a thread a Waystone run owns."""
    graph = _counting_graph(parts(runtime).saver)
    config: Any = {"configurable": {"thread_id": "no-run"}}
    assert graph.invoke({"n": 0}, config)["n"] == 3
    assert graph.invoke({"n": 0}, config)["n"] == 3  # on again, from its last state


def test_a_connection_that_is_not_autocommit_is_refused_with_what_to_do(
    database_url: str,
) -> None:
    with (
        psycopg.connect(database_url, row_factory=dict_row) as conn,
        pytest.raises(BadInput, match="autocommit=True"),
    ):
        WaystoneSaver(conn)
    with (
        ConnectionPool(database_url, kwargs={"row_factory": dict_row}, open=False) as plain,
        pytest.raises(BadInput, match="'autocommit': True"),
    ):
        WaystoneSaver(plain)


def test_a_pool_and_a_connection_of_tuple_rows_work_as_with_the_stock_saver(
    database_url: str,
) -> None:
    """The stock saver asks each cursor for dict rows, so its users' pools often give
    tuples (LangGraph's own test fixtures do); the caller's row factory is left as it was."""
    with ConnectionPool(database_url, kwargs={"autocommit": True}, open=True) as tuples:
        graph = _counting_graph(WaystoneSaver(tuples))
        assert graph.invoke({"n": 0}, {"configurable": {"thread_id": "tuples"}})["n"] == 3
        with tuples.connection() as conn:
            assert conn.execute("SELECT 1 AS one").fetchone() == (1,)
    with psycopg.connect(database_url, autocommit=True) as conn:
        graph = _counting_graph(WaystoneSaver(conn))
        assert graph.invoke({"n": 0}, {"configurable": {"thread_id": "one"}})["n"] == 3
        assert conn.execute("SELECT 1 AS one").fetchone() == (1,)


@pytest.mark.parametrize(
    "entry, message",
    [
        ("no_such_module_here", "cannot import 'no_such_module_here'"),
        (":Order", "neither module nor module:Class"),
        (("a", "b", "c"), "is not a class"),
    ],
)
def test_a_bad_allowed_module_is_refused_with_what_to_do(
    database_url: str, entry: Any, message: str
) -> None:
    with (
        pytest.raises(BadInput, match=message),
        WaystoneSaver.from_conn_string(database_url, allowed_modules=[entry]),
    ):
        pass


def test_langgraphs_strict_mode_widens_the_saver_by_a_graphs_state_types(
    database_url: str, sealed: None
) -> None:
    """With LANGGRAPH_STRICT_MSGPACK, LangGraph asks the checkpointer for a copy that loads
    the graph's state types (``with_allowlist``); the sealed serializer widens too."""
    strict = JsonPlusSerializer(allowed_msgpack_modules=None)  # as strict mode makes it
    with WaystoneSaver.from_conn_string(database_url, serde=strict) as saver:
        widened = saver.with_allowlist(
            {(__name__, "Order"), (__name__, "Parcel"), ("langchain_core.agents", "AgentAction")}
        )
        assert widened is not saver and widened._held is saver._held  # one saver's state
        _check_typed_run(widened, database_url)
        assert saver.with_allowlist(set()) is saver


def test_the_async_saver_is_built_as_langgraphs_async_saver(
    database_url: str, sealed: None
) -> None:
    """``async with AsyncWaystoneSaver.from_conn_string(url)`` and ``await setup()``, as for
    LangGraph's ``AsyncPostgresSaver``; the user's types come back through its async
    methods, redacted and sealed at rest."""
    assert waystone.AsyncWaystoneSaver.__name__ == "AsyncWaystoneSaver"

    async def run() -> None:
        allowed = [Order, Parcel, ("langchain_core.agents", "AgentAction")]
        async with waystone.AsyncWaystoneSaver.from_conn_string(
            database_url, allowed_modules=allowed
        ) as saver:
            await saver.setup()
            graph = _typed_graph(saver)
            config: Any = {"configurable": {"thread_id": "typed-async"}}
            await graph.ainvoke({"notes": []}, config)
            waiting = await graph.aget_state(config)
            assert waiting.next == ("ask",)
            _assert_typed(waiting.values)
            done = await graph.ainvoke(Command(resume="yes"), config)
            _assert_typed(done)
            assert done["answer"] == "yes"

    asyncio.run(run())
    with psycopg.connect(database_url, autocommit=True) as conn:
        kinds = "SELECT DISTINCT type FROM checkpoint_blobs WHERE thread_id = 'typed-async'"
        assert_sealed(conn, kinds, [EMAIL])
