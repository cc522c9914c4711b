"""Waystone's saver where LangGraph's stock Postgres saver would be: set up on the
connections the stock saver's own tests open (``prepare_threshold=0``), DeltaChannel
histories read as the stock saver reads them, sync and async, and a serializer given at
construction or set later that never writes a blob unsealed."""

from __future__ import annotations

import asyncio
import dataclasses
import operator
from typing import Annotated, Any
from uuid import uuid4

import psycopg
import pydantic
import pytest
from langchain_core.agents import AgentAction, AgentFinish
from langgraph.checkpoint.base import Checkpoint, empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool
from typing_extensions import TypedDict

from tests.conftest import ENCRYPTION_KEY
from tests.support.chain import chain
from tests.support.scan import assert_sealed
from waystone import AsyncWaystoneSaver, BadInput, Settings, WaystoneSaver

CHANNEL = "items"
PLANTED = "plainly-planted-value-7f3a"


def _connect(url: str) -> psycopg.Connection[Any]:
    """A connection as the stock saver's ``from_conn_string`` and its tests open one."""
    return psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)


class Count(TypedDict, total=False):
    n: int


def _counting_graph(saver: Any) -> Any:
    builder = StateGraph(Count)
    builder.add_node("bump", lambda s: {"n": s.get("n", 0) + 1})
    builder.add_edge(START, "bump")
    builder.add_conditional_edges("bump", lambda s: "bump" if s["n"] < 3 else END)
    return builder.compile(checkpointer=saver)


def test_setup_works_on_a_connection_that_prepares_every_statement(
    empty_database_url: str,
) -> None:
    with _connect(empty_database_url) as conn:
        saver = WaystoneSaver(conn)
        saver.setup()
        saver.setup()  # idempotent, on the same connection
        config: Any = {"configurable": {"thread_id": "prepared"}}
        assert _counting_graph(saver).invoke({"n": 0}, config) == {"n": 3}
    with _connect(empty_database_url) as conn:
        fences = conn.execute(
            "SELECT count(*) AS n FROM pg_trigger WHERE tgname = 'waystone_fence'"
        ).fetchone()
        assert fences == {"n": 3}


def test_setup_works_on_the_connections_from_conn_string_opens(empty_database_url: str) -> None:
    settings = Settings(prepare_threshold=0)
    with WaystoneSaver.from_conn_string(empty_database_url, settings=settings) as saver:
        saver.setup()

    async def set_up() -> None:
        async with AsyncWaystoneSaver.from_conn_string(
            empty_database_url, settings=settings
        ) as saver:
            await saver.setup()
            config: Any = {"configurable": {"thread_id": "prepared-async"}}
            assert await _counting_graph(saver).ainvoke({"n": 0}, config) == {"n": 3}

    asyncio.run(set_up())


def test_from_conn_string_gives_one_connection_a_caller_may_pipeline_as_the_stock_tests_do(
    empty_database_url: str,
) -> None:
    with WaystoneSaver.from_conn_string(empty_database_url) as saver:
        saver.setup()
        assert isinstance(saver.conn, psycopg.Connection)
        with saver.conn.pipeline() as pipe:
            saver.pipe = pipe
            config: Any = {"configurable": {"thread_id": "piped"}}
            assert _counting_graph(saver).invoke({"n": 0}, config) == {"n": 3}
            assert len(list(saver.list(config))) == 5  # input, three steps, the end
        conn = saver.conn
    assert conn.closed

    async def piped() -> None:
        async with AsyncWaystoneSaver.from_conn_string(empty_database_url) as saver:
            await saver.setup()
            assert isinstance(saver.conn, AsyncConnection)
            async with saver.conn.pipeline() as pipe:
                saver.pipe = pipe
                config: Any = {"configurable": {"thread_id": "piped-async"}}
                assert await _counting_graph(saver).ainvoke({"n": 0}, config) == {"n": 3}
                assert len([c async for c in saver.alist(config)]) == 5
            # one database: what the sync saver wrote is there
            again = await saver.aget_tuple({"configurable": {"thread_id": "piped"}})
            assert again is not None and again.checkpoint["channel_values"]["n"] == 3

    asyncio.run(piped())


def test_the_async_saver_takes_the_async_connection_or_pool_the_stock_one_takes(
    empty_database_url: str,
) -> None:
    async def run() -> None:
        async with await AsyncConnection.connect(
            empty_database_url, autocommit=True, prepare_threshold=0, row_factory=dict_row
        ) as conn:
            saver = AsyncWaystoneSaver(conn)
            await saver.setup()
            config: Any = {"configurable": {"thread_id": "on-a-connection"}}
            assert await _counting_graph(saver).ainvoke({"n": 0}, config) == {"n": 3}
            assert not conn.closed  # the caller's
        async with AsyncConnectionPool(
            empty_database_url,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        ) as pool:
            saver = AsyncWaystoneSaver(pool)
            await saver.setup()
            config = {"configurable": {"thread_id": "on-a-pool"}}
            assert await _counting_graph(saver).ainvoke({"n": 0}, config) == {"n": 3}
            again = await saver.aget_tuple({"configurable": {"thread_id": "on-a-connection"}})
            assert again is not None and again.checkpoint["channel_values"]["n"] == 3

    asyncio.run(run())


def test_the_async_saver_refuses_what_it_cannot_use_with_what_to_do(database_url: str) -> None:
    with (
        psycopg.connect(database_url, autocommit=True, row_factory=dict_row) as conn,
        pytest.raises(BadInput, match="use WaystoneSaver"),
    ):
        AsyncWaystoneSaver(conn)  # type: ignore[arg-type]

    async def plain() -> None:
        async with await AsyncConnection.connect(database_url) as conn:
            with pytest.raises(BadInput, match="autocommit=True"):
                AsyncWaystoneSaver(conn)  # type: ignore[arg-type]

    asyncio.run(plain())


async def _chain(saver: Any, seed: Any) -> dict[str, Any]:
    """``seed`` stored at step 1 of a 4-step chain, each step with a write to the channel
    (the shape of LangGraph's own test of inline seeds); returns the head's config."""
    thread_id = str(uuid4())
    parent: dict[str, Any] | None = None
    for step in range(4):
        config: dict[str, Any] = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        if parent is not None:
            config["configurable"]["checkpoint_id"] = parent["configurable"]["checkpoint_id"]
        checkpoint: Checkpoint = empty_checkpoint()
        checkpoint["id"] = str(uuid6(clock_seq=step))
        new_versions: dict[str, Any] = {}
        if step == 1:
            checkpoint["channel_values"][CHANNEL] = seed
            new_versions[CHANNEL] = "v1"
        checkpoint["channel_versions"][CHANNEL] = f"v{step}"
        meta: Any = {"source": "loop", "step": step, "parents": {}}
        parent = dict(await saver.aput(config, checkpoint, meta, new_versions))
        await saver.aput_writes(parent, [(CHANNEL, f"w{step}")], str(uuid4()))
    assert parent is not None
    return parent


async def _histories(saver: Any) -> list[tuple[Any, list[str]]]:
    """(the seed or "<none>", the writes) of a chain for each of SEEDS, read async; the
    sync read must agree."""
    found = []
    for seed in SEEDS:
        head = await _chain(saver, seed)
        entry = (await saver.aget_delta_channel_history(config=head, channels=[CHANNEL]))[CHANNEL]
        same = await asyncio.to_thread(
            saver.get_delta_channel_history, config=head, channels=[CHANNEL]
        )
        assert same[CHANNEL] == entry
        found.append((entry.get("seed", "<none>"), [w[2] for w in entry["writes"]]))
    return found


SEEDS = (42, "x", 3.5, None, True, [10, 20])


@pytest.mark.parametrize("sealing", [False, True], ids=["plain", "sealed"])
def test_the_async_delta_history_returns_what_the_stock_saver_returns(
    database_url: str, sealing: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An inline ``None`` seed (indistinguishable from no value) gives no seed and every
    write, as the stock saver gives, sync and async; the other seeds are found. The read
    is the stock saver's two queries, never a read of each checkpoint of the chain."""

    async def stock() -> list[tuple[Any, list[str]]]:
        async with AsyncPostgresSaver.from_conn_string(database_url) as saver:
            return await _histories(saver)

    async def ours() -> list[tuple[Any, list[str]]]:
        async with AsyncWaystoneSaver.from_conn_string(database_url) as saver:
            reads: list[Any] = []
            read = saver.aget_tuple

            async def counted(config: Any) -> Any:
                reads.append(config)
                return await read(config)

            monkeypatch.setattr(saver, "aget_tuple", counted)
            found = await _histories(saver)
            assert reads == []  # the heads name their checkpoint: nothing else is read
            return found

    theirs = asyncio.run(stock())
    with psycopg.connect(database_url, autocommit=True) as conn:
        stocks = [r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")]
    if sealing:
        monkeypatch.setenv("WAYSTONE_ENCRYPTION_KEY", ENCRYPTION_KEY)
    assert asyncio.run(ours()) == theirs
    assert theirs[3] == ("<none>", ["w0", "w1", "w2"])  # the inline None
    assert theirs[0] == (42, ["w1", "w2"])
    if sealing:
        with psycopg.connect(database_url, autocommit=True) as conn:
            kinds = conn.execute(
                "SELECT DISTINCT type FROM checkpoint_blobs WHERE thread_id <> ALL(%s)", (stocks,)
            ).fetchall()
        assert kinds and all(k[0].startswith("sealed+") for k in kinds), kinds


class Address(pydantic.BaseModel):
    city: str
    line: str


class Customer(pydantic.BaseModel):
    """A pydantic state schema with a nested model, as LangGraph's own pydantic tests."""

    name: str
    address: Address
    visits: int = 0


@dataclasses.dataclass
class Basket:
    """A dataclass state schema, as LangGraph's own dataclass state tests."""

    items: list[str]
    note: str = ""


class AgentState(TypedDict, total=False):
    """The state of LangGraph's own agent tests: the outcome is an action or a finish."""

    input: str
    outcome: AgentAction | AgentFinish | None
    steps: Annotated[list[tuple[AgentAction, str]], operator.add]


def _customer_graph(saver: Any) -> Any:
    builder = chain(
        Customer,
        ("visit", lambda s: {"visits": s.visits + 1}),
        ("confirm", lambda s: {"name": interrupt("confirm?")}),
    )
    return builder.compile(checkpointer=saver)


def _basket_graph(saver: Any) -> Any:
    builder = chain(
        Basket,
        ("add", lambda s: {"items": [*s.items, PLANTED]}),
        ("confirm", lambda s: {"note": interrupt("confirm?")}),
    )
    return builder.compile(checkpointer=saver)


def _agent_graph(saver: Any) -> Any:
    def act(state: AgentState) -> dict[str, Any]:
        action = AgentAction(tool="search", tool_input={"q": PLANTED}, log="look it up")
        return {"outcome": action, "steps": [(action, "found it")]}

    def finish(state: AgentState) -> dict[str, Any]:
        interrupt("finish?")
        return {"outcome": AgentFinish(return_values={"answer": PLANTED}, log="done")}

    builder = chain(AgentState, ("act", act), ("finish", finish))
    return builder.compile(checkpointer=saver)


def _check_types(customer: Any, basket: Any, agent: Any) -> None:
    assert type(customer["address"]) is Address and customer["address"].city == PLANTED
    assert basket["items"] == ["apple", PLANTED]
    assert type(agent["outcome"]) is AgentAction and agent["outcome"].tool_input == {"q": PLANTED}
    assert type(agent["steps"][0][0]) is AgentAction


def _run_all(saver: Any, tag: str) -> None:
    """Each graph to its interrupt, its state read back from the saver, then resumed."""
    customer = _customer_graph(saver)
    basket = _basket_graph(saver)
    agent = _agent_graph(saver)
    configs: list[Any] = [{"configurable": {"thread_id": f"{tag}-{n}"}} for n in range(3)]
    customer.invoke(Customer(name="c", address=Address(city=PLANTED, line="1 Main St")), configs[0])
    basket.invoke(Basket(items=["apple"]), configs[1])
    agent.invoke({"input": "go", "steps": []}, configs[2])
    _check_types(
        customer.get_state(configs[0]).values,
        basket.get_state(configs[1]).values,
        agent.get_state(configs[2]).values,
    )
    done = agent.invoke(Command(resume="yes"), configs[2])
    assert type(done["outcome"]) is AgentFinish and done["outcome"].return_values == {
        "answer": PLANTED
    }
    assert customer.invoke(Command(resume="Ana"), configs[0])["address"].city == PLANTED


async def _arun_all(saver: Any, tag: str) -> None:
    customer = _customer_graph(saver)
    basket = _basket_graph(saver)
    agent = _agent_graph(saver)
    configs: list[Any] = [{"configurable": {"thread_id": f"{tag}-{n}"}} for n in range(3)]
    await customer.ainvoke(
        Customer(name="c", address=Address(city=PLANTED, line="1 Main St")), configs[0]
    )
    await basket.ainvoke(Basket(items=["apple"]), configs[1])
    await agent.ainvoke({"input": "go", "steps": []}, configs[2])
    _check_types(
        (await customer.aget_state(configs[0])).values,
        (await basket.aget_state(configs[1])).values,
        (await agent.aget_state(configs[2])).values,
    )
    done = await agent.ainvoke(Command(resume="yes"), configs[2])
    assert type(done["outcome"]) is AgentFinish


def _all_sealed(database_url: str) -> None:
    """Every blob and write sealed; no column holds the planted value in plain text."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        kinds = "SELECT type FROM checkpoint_blobs UNION SELECT type FROM checkpoint_writes"
        assert_sealed(conn, kinds, [PLANTED])


def test_langgraphs_state_types_come_back_as_themselves_with_no_option_set(
    database_url: str,
) -> None:
    with WaystoneSaver.from_conn_string(database_url) as saver:
        _run_all(saver, "sync")

    async def run() -> None:
        async with AsyncWaystoneSaver.from_conn_string(database_url) as saver:
            await _arun_all(saver, "async")

    asyncio.run(run())


@pytest.mark.parametrize("when", ["given", "set-later"])
def test_a_serde_given_or_set_later_never_turns_sealing_off(
    database_url: str, sealed: None, when: str
) -> None:
    given = JsonPlusSerializer() if when == "given" else None
    with WaystoneSaver.from_conn_string(database_url, serde=given) as saver:
        if when == "set-later":
            saver.serde = JsonPlusSerializer()
        assert saver.serde is not given  # wrapped
        _run_all(saver, f"sync-{when}")

    async def run() -> None:
        async with AsyncWaystoneSaver.from_conn_string(database_url, serde=given) as saver:
            if when == "set-later":
                saver.serde = JsonPlusSerializer()
            await _arun_all(saver, f"async-{when}")

    asyncio.run(run())
    _all_sealed(database_url)
