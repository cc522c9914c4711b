"""Waystone's fenced saver passes LangGraph's checkpointer conformance suite."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

from waystone.checkpointing.database import Database
from waystone.checkpointing.saver import WaystoneSaver
from waystone.config import Settings


def test_waystone_saver_passes_the_conformance_suite(database_url: str) -> None:
    db = Database.open(Settings(database_url=database_url, pool_max_size=4))

    @checkpointer_test(name="WaystoneSaver")
    async def waystone_saver() -> AsyncGenerator[WaystoneSaver, None]:
        yield WaystoneSaver(db)

    try:
        report = asyncio.run(validate(waystone_saver))
    finally:
        db.close()
    failures = {name: r.failures for name, r in report.results.items() if r.passed is False}
    assert not failures, failures
    assert report.passed_all_base(), report.results
    passed = {name for name, r in report.results.items() if r.passed}
    assert {c.value for c in ALL_CAPABILITIES} <= passed  # all 8, beyond the stock saver
    assert all(report.results[c.value].tests_passed > 0 for c in ALL_CAPABILITIES)
