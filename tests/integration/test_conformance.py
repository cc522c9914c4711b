"""Waystone's saver passes LangGraph's checkpointer conformance suite, all 8 capabilities,
both bare and as the runtime uses it (redacting personal data through the vault)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

from waystone.checkpointing.database import Database
from waystone.checkpointing.saver import WaystoneSaver
from waystone.config import Settings
from waystone.privacy.vault import Vault


@pytest.mark.parametrize("redacting", [False, True], ids=["bare", "redacting"])
def test_waystone_saver_passes_the_conformance_suite(database_url: str, redacting: bool) -> None:
    db = Database.open(Settings(database_url=database_url, pool_max_size=4))
    redact = Vault(db, b"k" * 32).redact if redacting else None

    @checkpointer_test(name=f"WaystoneSaver-{redacting}")
    async def waystone_saver() -> AsyncGenerator[WaystoneSaver, None]:
        yield WaystoneSaver(db, redact=redact)

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
