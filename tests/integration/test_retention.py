"""prune deletes old finished runs' checkpoints, keeps their evidence, and never touches
a run that has not ended; --dry-run changes nothing."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest

from tests.conftest import REFUND_INPUT
from waystone import BadInput, Runtime, TransitionNotAllowed
from waystone._runtime.retention import parse_age
from waystone.examples.provider import ProviderProcess

SMALL = {**REFUND_INPUT, "amount": "40.00"}


def test_parse_age() -> None:
    assert parse_age("30d") == timedelta(days=30)
    assert parse_age("12h") == timedelta(hours=12)
    assert parse_age("2w") == timedelta(weeks=2)
    with pytest.raises(BadInput):
        parse_age("thirty days")


def _age(sql: psycopg.Connection[Any], thread_id: str, days: int) -> None:
    sql.execute(
        "UPDATE waystone.runs SET updated_at = now() - make_interval(days => %s) "
        "WHERE thread_id = %s",
        (days, thread_id),
    )


def _rows(sql: psycopg.Connection[Any], thread_id: str) -> tuple[int, int, int, int]:
    row = sql.execute(
        "SELECT (SELECT count(*) FROM checkpoints WHERE thread_id = %(t)s),"
        " (SELECT count(*) FROM checkpoint_writes WHERE thread_id = %(t)s),"
        " (SELECT count(*) FROM waystone.run_events WHERE thread_id = %(t)s),"
        " (SELECT count(*) FROM waystone.effects WHERE thread_id = %(t)s)",
        {"t": thread_id},
    ).fetchone()
    assert row is not None
    return (row[0], row[1], row[2], row[3])


def test_prune_keeps_evidence_and_spares_active_runs(
    runtime: Runtime, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    old_done = runtime.start("refund", SMALL).thread_id
    assert runtime.run(old_done).state == "done"
    old_failed = runtime.start("refund", REFUND_INPUT).thread_id
    runtime.run(old_failed)
    assert runtime.reject(old_failed, by="ana", reason="no").state == "failed"
    old_waiting = runtime.start("refund", REFUND_INPUT).thread_id
    assert runtime.run(old_waiting).state == "waiting"
    recent_done = runtime.start("refund", SMALL).thread_id
    assert runtime.run(recent_done).state == "done"
    for thread_id in (old_done, old_failed, old_waiting):
        _age(sql, thread_id, 40)
    before = {t: _rows(sql, t) for t in (old_done, old_failed, old_waiting, recent_done)}

    dry = runtime.prune(timedelta(days=30), dry_run=True)
    assert sorted(r["thread_id"] for r in dry["runs"]) == sorted([old_done, old_failed])
    assert {t: _rows(sql, t) for t in before} == before

    done = runtime.prune(timedelta(days=30))
    assert sorted(r["thread_id"] for r in done["runs"]) == sorted([old_done, old_failed])
    for thread_id in (old_done, old_failed):
        checkpoints, writes, events, effects = _rows(sql, thread_id)
        assert (checkpoints, writes) == (0, 0)
        assert (events, effects) == before[thread_id][2:]  # the evidence stays
    for thread_id in (old_waiting, recent_done):
        assert _rows(sql, thread_id) == before[thread_id]
    history = runtime.history(old_done)
    assert history["summary"]["outcome"]["state"] == "done"
    assert [c["tool"] for c in history["summary"]["completed"]] == ["refund", "notify_customer"]
    assert history["checkpoints"] == [] and history["events"]
    assert runtime.prune(timedelta(days=30))["runs"] == []  # nothing left to prune
    with pytest.raises(TransitionNotAllowed, match="pruned"):
        runtime.requeue(old_failed, by="ops", reason="again")
