"""An async worker's drive that is stuck (an async node awaiting what never comes) is
cancelled past its step budget: it does not hold one of the worker's slots, and the run
is taken up again once its lease lapses."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, TypedDict

import psycopg
import pytest
from langgraph.graph import StateGraph

from tests.conftest import wait_until
from tests.support.chain import chain
from tests.support.rows import run_state
from waystone import Runtime, Settings
from waystone.worker.aio import AsyncWorker

# lease 1 s; a user's graph's step budget: model_timeout_s + step_margin_s = 2.5 s
SHORT = {"lease_seconds": 1.0, "model_timeout_s": 2.0, "step_margin_s": 0.5}


class Waited(TypedDict, total=False):
    name: str
    attempts: int


ATTEMPTS: list[str] = []
CANCELLED: list[str] = []


async def _wait_forever_once(state: Waited) -> dict[str, Any]:
    """The first attempt awaits an event nothing sets; a later one returns at once."""
    ATTEMPTS.append(state["name"])
    if ATTEMPTS.count(state["name"]) == 1:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            CANCELLED.append(state["name"])
            raise
    return {"attempts": ATTEMPTS.count(state["name"])}


def stalling_graph() -> StateGraph[Any]:
    return chain(Waited, ("wait", _wait_forever_once))


@pytest.mark.timeout(120)
def test_a_stuck_async_drive_is_cancelled_and_frees_its_slot(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    ATTEMPTS.clear()
    CANCELLED.clear()
    settings = Settings(database_url=database_url, **SHORT)  # type: ignore[arg-type]
    with Runtime(settings, graphs={"stall": stalling_graph}) as rt:
        worker = AsyncWorker(rt, concurrency=1, poll_seconds=0.2)
        working = threading.Thread(target=worker.run, daemon=True)
        stuck_id = rt.start("stall", {"name": "stuck"}).thread_id
        working.start()
        try:
            wait_until(lambda: ATTEMPTS == ["stuck"], "the stuck run's node began")
            second_id = rt.start("stall", {"name": "second"}).thread_id
            # one slot: the second run is driven only once the stuck drive gave it up
            wait_until(lambda: run_state(sql, second_id) == "done", "the second run", timeout=60)
            wait_until(lambda: run_state(sql, stuck_id) == "done", "the stuck run", timeout=60)
            assert worker.stats.stuck >= 1
            assert CANCELLED[:1] == ["stuck"]
        finally:
            worker.stop()
            working.join(timeout=60)
    assert not working.is_alive()
