"""Waystone's saver passes LangGraph's checkpointer conformance suite, all 8 capabilities:
bare, as the runtime uses it (redacting personal data through the vault), and as a
LangGraph user builds it (from a connection string, a connection or a pool). The suite
drives the saver through its async methods, which run the sync ones."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import psycopg
import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from waystone._checkpointing.saver import WaystoneSaver, make_saver
from waystone._db.database import Database
from waystone._privacy.vault import Vault
from waystone.config import Settings


@pytest.mark.parametrize("redacting", [False, True], ids=["bare", "redacting"])
def test_waystone_saver_passes_the_conformance_suite(database_url: str, redacting: bool) -> None:
    db = Database.open(Settings(database_url=database_url, pool_max_size=4))
    redact = Vault(db, b"k" * 32).redact if redacting else None

    @checkpointer_test(name=f"WaystoneSaver-{redacting}")
    async def waystone_saver() -> AsyncGenerator[WaystoneSaver, None]:
        yield make_saver(db, redact=redact)

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


@pytest.mark.parametrize("made_from", ["conn_string", "connection", "pool"])
def test_the_saver_built_by_hand_passes_the_conformance_suite(
    database_url: str, made_from: str
) -> None:
    """As a LangGraph user builds it (redacting through the vault, as the runtime does)."""

    @checkpointer_test(name=f"WaystoneSaver-{made_from}")
    async def waystone_saver() -> AsyncGenerator[WaystoneSaver, None]:
        if made_from == "conn_string":
            with WaystoneSaver.from_conn_string(database_url) as saver:
                saver.setup()
                yield saver
        elif made_from == "connection":
            with psycopg.connect(database_url, autocommit=True, row_factory=dict_row) as conn:
                yield WaystoneSaver(conn)
        else:
            kwargs = {"autocommit": True, "row_factory": dict_row}
            with ConnectionPool(database_url, kwargs=kwargs, max_size=4) as pool:
                yield WaystoneSaver(pool)

    report = asyncio.run(validate(waystone_saver))
    failures = {name: r.failures for name, r in report.results.items() if r.passed is False}
    assert not failures, failures
    passed = {name for name, r in report.results.items() if r.passed}
    assert {c.value for c in ALL_CAPABILITIES} <= passed
    assert all(report.results[c.value].tests_passed > 0 for c in ALL_CAPABILITIES)
