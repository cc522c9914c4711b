"""A pipelined batch that fails leaves no connection behind that fails every later use of
a statement: psycopg counts a statement it first prepares inside a pipeline as prepared
even when the pipeline aborted before the server made it, and every later use of it on
that connection fails with "prepared statement ... does not exist"."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from tests.support.notes import claimed
from waystone import LeaseLost, Runtime, Settings, sql
from waystone._checkpointing.held import Statement
from waystone._checkpointing.saver import make_saver
from waystone._db.database import Database, jsonify
from waystone._runs.registry import Run


def _refused_after_five_uses(one: Database, run: Any) -> None:
    """``get_run`` used five times (not prepared yet: the sixth use prepares it), then in a
    batch after an event under the run's stale lease: the event is refused, ``get_run``
    aborted with it."""
    for _ in range(5):
        assert one.fetch_one("get_run", thread_id=run.thread_id) is not None
    stale = {
        "thread_id": run.thread_id,
        "kind": "note",
        "reason": "from a stale lease",
        "evidence": {},
        "actor": "test",
        "lease_token": run.lease_token,
    }
    with pytest.raises(LeaseLost):
        one.batch(
            [("insert_event", stale), ("get_run", {"thread_id": run.thread_id})],
            fence=run.lease_token,
        )


@pytest.mark.timeout(60)
def test_a_statement_first_prepared_in_a_failed_pipeline_runs_after_it(
    runtime: Runtime, database_url: str
) -> None:
    run = claimed(runtime)
    runtime.cancel(run.thread_id, by="bob", reason="stop")  # writes under its token: refused
    one = Database.open(Settings(database_url=database_url, pool_min_size=1, pool_max_size=1))
    try:
        _refused_after_five_uses(one, run)
        found = one.fetch_one("get_run", thread_id=run.thread_id)
        assert found is not None and found["state"] == "failed"
    finally:
        one.close()


@pytest.mark.timeout(60)
def test_a_statement_first_prepared_in_a_failed_save_runs_after_it(
    runtime: Runtime, database_url: str
) -> None:
    """The same through the saver: a statement riding with a save (as a receipt does)
    whose sixth use is in a save refused after a cancel still runs in a later save."""
    cancelled, other = claimed(runtime), claimed(runtime)
    one = Database.open(Settings(database_url=database_url, pool_min_size=1, pool_max_size=1))
    saver = make_saver(one)

    def save(run: Run, riding: list[Statement], task: str) -> None:
        saver.ride(run.thread_id, run.lease_token, riding)
        config: Any = {
            "configurable": {
                "thread_id": run.thread_id,
                "checkpoint_ns": "",
                "checkpoint_id": "c-1",
                "lease_token": run.lease_token,
            }
        }
        saver.put_writes(config, [("note", task)], task_id=task, task_path="")

    def reading(run: Run) -> Statement:
        return (sql.query("get_run"), {"thread_id": run.thread_id}, False)

    try:
        for n in range(5):  # run, not prepared yet: the sixth use prepares it
            save(other, [reading(other)], f"t{n}")
        runtime.cancel(cancelled.thread_id, by="bob", reason="stop")
        refused = (
            sql.query("insert_event"),
            jsonify(
                {
                    "thread_id": cancelled.thread_id,
                    "kind": "note",
                    "reason": "from a stale lease",
                    "evidence": {},
                    "actor": "test",
                    "lease_token": cancelled.lease_token,
                }
            ),
            False,
        )
        with pytest.raises(LeaseLost):
            save(cancelled, [refused, reading(cancelled)], "refused")
        save(other, [reading(other)], "after")
    finally:
        one.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("threshold", [0, 5], ids=["prepared-at-once", "prepared-sixth"])
def test_a_callers_connection_outlives_a_failed_pipeline(
    runtime: Runtime, database_url: str, threshold: int
) -> None:
    """A connection the caller gave (not a pool's) cannot be replaced: it stays open, and
    a statement first prepared in the failed pipeline runs after it."""
    run = claimed(runtime)
    runtime.cancel(run.thread_id, by="bob", reason="stop")
    with psycopg.connect(
        database_url, autocommit=True, row_factory=dict_row, prepare_threshold=threshold
    ) as conn:
        one = Database.on(conn)
        _refused_after_five_uses(one, run)
        assert not conn.closed
        found = one.fetch_one("get_run", thread_id=run.thread_id)
        assert found is not None and found["state"] == "failed"
