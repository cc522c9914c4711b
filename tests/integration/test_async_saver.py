"""The async saver: LangGraph's conformance suite through its native async methods, and
its fence: a save under a lease token that moved on is refused whole."""

from __future__ import annotations

import asyncio
import operator
from collections.abc import AsyncGenerator
from typing import Annotated, Any, TypedDict

import psycopg
import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

from tests.support.chain import chain
from tests.support.inside import created_claimed, parts
from waystone import Runtime, Settings
from waystone._checkpointing.aio import AsyncWaystoneSaver, make_async_saver, open_async_pool
from waystone._db.database import Database
from waystone._privacy.vault import Vault
from waystone._runs.run_config import graph_config
from waystone.errors import LeaseLost


@pytest.mark.parametrize("redacting", [False, True], ids=["bare", "redacting"])
def test_the_async_saver_passes_the_conformance_suite(database_url: str, redacting: bool) -> None:
    settings = Settings(database_url=database_url, pool_max_size=4)
    db = Database.open(settings)
    redact = Vault(db, b"k" * 32).redact if redacting else None

    async def check() -> Any:
        apool = await open_async_pool(settings, database_url)

        @checkpointer_test(name=f"AsyncWaystoneSaver-{redacting}")
        async def async_saver() -> AsyncGenerator[AsyncWaystoneSaver, None]:
            yield make_async_saver(db, apool, redact=redact)

        try:
            return await validate(async_saver)
        finally:
            await apool.close()

    try:
        report = asyncio.run(check())
    finally:
        db.close()
    failures = {name: r.failures for name, r in report.results.items() if r.passed is False}
    assert not failures, failures
    passed = {name for name, r in report.results.items() if r.passed}
    assert {c.value for c in ALL_CAPABILITIES} <= passed
    assert all(report.results[c.value].tests_passed > 0 for c in ALL_CAPABILITIES)


class Count(TypedDict, total=False):
    steps: Annotated[list[str], operator.add]


async def _step(state: Count) -> dict[str, Any]:
    return {"steps": ["one"]}


def test_an_async_save_under_a_stale_lease_token_is_refused_whole(database_url: str) -> None:
    settings = Settings(database_url=database_url)
    builder = chain(Count, ("step", _step))
    with Runtime(settings) as rt:
        run = created_claimed(rt, "async-fence", "counter", "count")
        stale = graph_config("async-fence", lease_token=run.lease_token)
        rt.cancel("async-fence", by="ops", reason="taken from the first holder")  # token moves

        async def save() -> None:
            apool = await open_async_pool(settings, database_url)
            try:
                saver = make_async_saver(parts(rt).db, apool, redact=parts(rt).vault.redact)
                graph = builder.compile(checkpointer=saver)
                await graph.ainvoke({"steps": []}, stale, durability="sync")
            finally:
                await apool.close()

        with pytest.raises(LeaseLost):
            asyncio.run(save())
        with psycopg.connect(database_url) as conn:
            rows = conn.execute(
                "SELECT (SELECT count(*) FROM checkpoints WHERE thread_id = %s), "
                "(SELECT count(*) FROM checkpoint_blobs WHERE thread_id = %s), "
                "(SELECT count(*) FROM checkpoint_writes WHERE thread_id = %s)",
                ("async-fence",) * 3,
            ).fetchone()
        assert rows == (0, 0, 0)  # nothing of the stale holder's step was written


def test_each_async_step_is_one_fenced_round_trip(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new run's input checkpoints and each node's writes wait for the next save: two
    nodes, two batches, each carrying the run's lease token."""
    settings = Settings(database_url=database_url)
    builder = chain(Count, ("one", _step), ("two", _step))
    with Runtime(settings) as rt:
        run = created_claimed(rt, "async-batches", "counter", "count")
        config = graph_config("async-batches", lease_token=run.lease_token)
        sent: list[int | None] = []

        async def drive() -> Any:
            apool = await open_async_pool(settings, database_url)
            try:
                saver = make_async_saver(parts(rt).db, apool, redact=parts(rt).vault.redact)
                send_one = saver._send_one

                async def counted(batch: Any) -> None:
                    sent.append(batch.token)
                    await send_one(batch)

                monkeypatch.setattr(saver, "_send_one", counted)
                graph = builder.compile(checkpointer=saver)
                with saver.empty("async-batches"):
                    await graph.ainvoke({"steps": []}, config, durability="sync")
                return await graph.aget_state(config)
            finally:
                await apool.close()

        state = asyncio.run(drive())
    assert state.values == {"steps": ["one", "one"]}
    assert sent == [run.lease_token, run.lease_token]
