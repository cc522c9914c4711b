"""An async drive's checkpoints go to Postgres through the async saver, on an async pool of
the running event loop (one per loop), fenced by the run's lease token."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import psycopg
import pytest
from langgraph.graph import StateGraph
from psycopg_pool import AsyncConnectionPool

from tests.support.chain import chain
from tests.support.inside import parts
from waystone import Runtime, Settings
from waystone._checkpointing import loops
from waystone._checkpointing.aio import AsyncWaystoneSaver
from waystone._checkpointing.held import Batch
from waystone.errors import LeaseLost


class Count(TypedDict, total=False):
    name: str
    steps: Annotated[list[str], operator.add]


async def _step(state: Count) -> dict[str, Any]:
    await asyncio.sleep(0)
    return {"steps": ["one"]}


def two_steps() -> StateGraph[Any]:
    return chain(Count, ("one", _step), ("two", _step))


@pytest.fixture
def rt_graphs() -> dict[str, Any]:
    return {"two": two_steps}


@pytest.fixture
def batches(monkeypatch: pytest.MonkeyPatch) -> list[Batch]:
    """Every batch an async saver sends."""
    sent: list[Batch] = []
    send_one = AsyncWaystoneSaver._send_one

    async def counted(self: AsyncWaystoneSaver, batch: Batch) -> None:
        sent.append(batch)
        await send_one(self, batch)

    monkeypatch.setattr(AsyncWaystoneSaver, "_send_one", counted)
    return sent


@pytest.fixture
def pools(monkeypatch: pytest.MonkeyPatch) -> list[AsyncConnectionPool[Any]]:
    """Every async pool the runtime opens."""
    opened: list[AsyncConnectionPool[Any]] = []
    open_pool = loops.open_async_pool

    async def recorded(settings: Settings, url: str) -> AsyncConnectionPool[Any]:
        opened.append(await open_pool(settings, url))
        return opened[-1]

    monkeypatch.setattr(loops, "open_async_pool", recorded)
    return opened


def test_an_async_drive_saves_each_step_through_the_async_saver(
    rt: Runtime, batches: list[Batch]
) -> None:
    done = asyncio.run(rt.ainvoke("two", {"steps": []}, thread_id="two-1"))

    assert done.state == "done"
    assert rt.graph("two").get_state(rt.config("two-1")).values["steps"] == ["one", "one"]
    # one fenced round trip per node: the input checkpoints ride with the first node's
    token = parts(rt).registry.get("two-1").lease_token
    assert [b.token for b in batches if b.own] == [token, token]


async def _cancelled(state: Count) -> dict[str, Any]:
    """The run is taken from this drive while its node runs: the token moves on."""
    await asyncio.sleep(0)
    RT[0].cancel(state["name"], by="ops", reason="taken from the first holder")
    return {"steps": ["late"]}


RT: list[Runtime] = []


def cancelled_midway() -> StateGraph[Any]:
    return chain(Count, ("late", _cancelled))


def test_an_async_drive_whose_lease_moved_on_is_fenced_out_with_lease_lost(
    rt: Runtime, batches: list[Batch], database_url: str
) -> None:
    RT[:] = [rt]
    rt.register_graph("late", cancelled_midway)

    with pytest.raises(LeaseLost):
        asyncio.run(rt.ainvoke("late", {"name": "late-1", "steps": []}, thread_id="late-1"))

    assert [b.own for b in batches] == [True]  # the node's save was sent, and refused
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT (SELECT count(*) FROM checkpoints WHERE thread_id = %s), "
            "(SELECT count(*) FROM checkpoint_writes WHERE thread_id = %s)",
            ("late-1",) * 2,
        ).fetchone()
    assert rows == (0, 0)
    assert rt.status("late-1").state == "failed"  # as the cancel left it


def test_each_event_loop_gets_its_own_async_pool_closed_when_the_loop_ends(
    rt: Runtime, pools: list[AsyncConnectionPool[Any]], batches: list[Batch]
) -> None:
    first = asyncio.run(rt.ainvoke("two", {"steps": []}, thread_id="loop-1"))
    assert [p.closed for p in pools] == [True]
    second = asyncio.run(rt.ainvoke("two", {"steps": []}, thread_id="loop-2"))

    assert (first.state, second.state) == ("done", "done")
    assert len(pools) == 2 and pools[0] is not pools[1]
    assert all(p.closed for p in pools)
    assert len([b for b in batches if b.own]) == 4  # two steps on each loop's pool


def test_closing_the_runtime_closes_the_pool_of_a_loop_still_running(
    rt: Runtime, pools: list[AsyncConnectionPool[Any]]
) -> None:
    async def drive_then_close() -> bool:
        await rt.ainvoke("two", {"steps": []}, thread_id="close-1")
        await rt.aclose()
        return pools[0].closed

    assert asyncio.run(drive_then_close()) is True


def test_an_async_graph_driven_by_the_sync_run_ends_done_not_failed(
    rt: Runtime, batches: list[Batch]
) -> None:
    """``invoke`` and ``run`` (the CLI's ``waystone run``, a threaded worker's slot) drive a
    graph of async nodes on an event loop of their own: ``graph.invoke`` refuses them."""
    done = rt.invoke("two", {"steps": []}, thread_id="sync-1")
    queued = rt.start("two", {"steps": []}, thread_id="sync-2")
    ran = rt.run(queued.thread_id)

    assert (done.state, ran.state) == ("done", "done"), (done.reason, ran.reason)
    assert rt.graph("two").get_state(rt.config("sync-2")).values["steps"] == ["one", "one"]
    assert len([b for b in batches if b.own]) == 4  # on each drive's own loop's pool
