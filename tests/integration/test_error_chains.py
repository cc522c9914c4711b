"""Errors from Postgres come out with a chain that ends: translated ones are raised from the
original, the others as they are, never from themselves (a cycle in the chain, which a
walker of ``__cause__`` then follows for ever)."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import psycopg
import pytest

from tests.support.background import Background
from tests.support.inside import parts
from tests.support.notes import bench_storage
from waystone import LeaseLost, Runtime, Settings


def _chain_ends(exc: BaseException) -> bool:
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None:
        if id(link) in seen:
            return False
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return True


@pytest.mark.timeout(60)
def test_a_database_error_is_not_raised_from_itself(runtime: Runtime) -> None:
    params: dict[str, Any] = {
        "thread_id": "t-1",
        "kind": "note",
        "reason": "a NUL \x00 byte",  # refused by psycopg: a DataError, no Waystone meaning
        "evidence": {},
        "actor": "test",
        "lease_token": None,
    }
    with pytest.raises(psycopg.DataError) as pooled:
        parts(runtime).db.execute("insert_event", **params)
    assert pooled.value.__cause__ is not pooled.value and _chain_ends(pooled.value)
    with parts(runtime).db.connection() as conn, pytest.raises(psycopg.DataError) as given:
        parts(runtime).db.execute("insert_event", conn=conn, **params)
    assert given.value.__cause__ is not given.value and _chain_ends(given.value)


@pytest.mark.timeout(60)
def test_a_lease_lost_mid_drive_is_not_raised_from_itself(database_url: str) -> None:
    """A run cancelled while its tool runs: the drive's next write is refused, and the
    LeaseLost it raises has the refusal as its cause, not itself."""
    entered, release = threading.Event(), threading.Event()

    def slow_apply(args: dict[str, Any], key: str, timeout: float) -> dict[str, Any]:
        entered.set()
        release.wait(timeout=60)
        return {"id": key}

    base = bench_storage.agent(1)
    spec = replace(base, name="slow", tools={"note": replace(base.tools["note"], apply=slow_apply)})
    with Runtime(Settings(database_url=database_url)) as rt:
        rt.register(spec)
        thread_id = rt.start(spec.name, {}).thread_id
        driving = Background(lambda: rt.run(thread_id))
        try:
            assert entered.wait(timeout=60), "the tool was never called"
            rt.cancel(thread_id, by="bob", reason="changed my mind")
        finally:
            release.set()
            raised = driving.join(timeout=60)
    assert isinstance(raised, LeaseLost)
    assert raised.__cause__ is not raised and _chain_ends(raised)
