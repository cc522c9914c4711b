"""A claim reads a handful of rows however long the backlog, and still takes the oldest
runnable run of any kind (queued, due, signalled, or with an expired lease)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from tests.support.inside import parts
from tests.support.notes import registered
from waystone import Runtime
from waystone import sql as queries
from waystone.worker.sync import Worker

BACKLOG = 3000
HANDFUL = 10  # rows any node of a claim's plan may read (8 queued heads per agent)
PAST = datetime.now(UTC) - timedelta(hours=1)


def _backlog(
    conn: psycopg.Connection[Any], agent: str, n: int = BACKLOG, prefix: str = "backlog-"
) -> None:
    conn.execute(
        "INSERT INTO waystone.runs (thread_id, agent, goal, input, state, reason) "
        "SELECT %s || g, %s, 'g', '{}'::jsonb, 'queued', 'backlog' "
        "FROM generate_series(1, %s) g",
        (prefix, agent, n),
    )
    conn.execute("ANALYZE waystone.runs")


def _most_rows(plan: dict[str, Any]) -> int:
    """The most rows any node of an EXPLAIN ANALYZE plan read, produced or filtered out, over
    all its loops (EXPLAIN gives them per loop)."""
    per_loop = float(plan.get("Actual Rows", 0)) + float(plan.get("Rows Removed by Filter", 0))
    own = round(per_loop * float(plan.get("Actual Loops", 1)))
    return max([own, *(_most_rows(p) for p in plan.get("Plans", []))])


def _claim_plan(conn: psycopg.Connection[Any], **params: Any) -> dict[str, Any]:
    args = {"agents": None, "owner": "test", "lease_seconds": 30, "dead_owner": None}
    args.update(reason="claimed", **params)
    query = "claim" if params.get("thread_id") is None else "claim_named"
    with conn.transaction(force_rollback=True):
        row = (
            psycopg.ClientCursor(conn)
            .execute("EXPLAIN (ANALYZE, FORMAT JSON) " + queries.query(query), args)
            .fetchone()
        )
    assert row is not None
    found = row[0] if not isinstance(row[0], str) else json.loads(row[0])
    plan: dict[str, Any] = found[0]["Plan"]
    return plan


def test_a_claim_reads_a_handful_of_rows_however_long_the_backlog(
    runtime: Runtime, sql: psycopg.Connection[Any]
) -> None:
    spec = registered(runtime)
    _backlog(sql, spec.name)
    for plan in (
        _claim_plan(sql, thread_id=None, agents=[spec.name]),  # a worker's: its agents'
        _claim_plan(sql, thread_id=f"backlog-{BACKLOG // 2}"),  # a named one
    ):
        assert _most_rows(plan) <= HANDFUL, json.dumps(plan)[:2000]


def test_a_worker_for_some_agents_never_reads_past_other_agents_backlog(
    runtime: Runtime, sql: psycopg.Connection[Any]
) -> None:
    """Behind a backlog of another agent's queued runs, a worker that serves one agent (or
    two) finds its oldest queued run through the agent's own index, and takes it."""
    spec = registered(runtime)
    _backlog(sql, "someone-else")
    mine = [runtime.start(spec.name, {}).thread_id for _ in range(2)]
    for agents in ([spec.name], [spec.name, "another"]):
        plan = _claim_plan(sql, thread_id=None, agents=agents)
        assert _most_rows(plan) <= HANDFUL, json.dumps(plan)[:2000]
    taken = [parts(runtime).registry.claim(owner="test", lease_seconds=30, agents=[spec.name, "x"])]
    taken.append(parts(runtime).registry.claim(owner="test", lease_seconds=30, agents=[spec.name]))
    assert [run.thread_id if run else None for run in taken] == mine
    oldest = parts(runtime).registry.claim(owner="test", lease_seconds=30, agents=["someone-else"])
    assert oldest is not None and oldest.thread_id == "backlog-1"


def _generic_claim_plan(conn: psycopg.Connection[Any], agents: list[str]) -> dict[str, Any]:
    """The plan of a worker's claim as Postgres reuses it: generic, made without the
    parameters' values (``plan_cache_mode``), with the statistics of when it was made."""
    names: list[str] = []

    def numbered(found: re.Match[str]) -> str:
        if found.group(1) not in names:
            names.append(found.group(1))
        return f"${names.index(found.group(1)) + 1}"

    text = re.sub(r"%\((\w+)\)s", numbered, queries.query("claim"))
    args: dict[str, Any] = {"agents": agents, "owner": "test", "lease_seconds": 30}
    args["reason"] = "claimed"
    conn.execute("SET plan_cache_mode = force_generic_plan")
    conn.execute(f"PREPARE generic_claim ({', '.join(CLAIM_TYPES[n] for n in names)}) AS {text}")
    try:
        with conn.transaction(force_rollback=True):
            values = ", ".join(f"%({n})s::{CLAIM_TYPES[n]}" for n in names)
            explained = "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE generic_claim (" + values + ")"
            row = psycopg.ClientCursor(conn).execute(explained, args).fetchone()
    finally:
        conn.execute("DEALLOCATE generic_claim")
        conn.execute("RESET plan_cache_mode")
    assert row is not None
    plan: dict[str, Any] = row[0][0]["Plan"]
    return plan


CLAIM_TYPES = {"agents": "text[]", "owner": "text", "lease_seconds": "float8", "reason": "text"}


@pytest.mark.parametrize(
    ("kind", "later", "now"),
    [
        (
            "due waits",
            "state = 'waiting', waiting_for = 'x', wake_at = now() + interval '1 h'",
            "wake_at = now() - interval '1 h'",
        ),
        (
            "expired leases",
            "state = 'running', lease_expires_at = now() + interval '1 h'",
            "lease_expires_at = now() - interval '1 h'",
        ),
    ],
)
def test_a_worker_never_reads_past_other_agents_due_waits_or_expired_leases(
    runtime: Runtime, sql: psycopg.Connection[Any], kind: str, later: str, now: str
) -> None:
    """An agent no worker serves any more may leave many runs overdue (waits past their
    deadline, leases long expired): each agent's are found through its own index, and
    never by reading the worker's own agent's runs that are not due (as many waits with a
    deadline ahead, and live leases). Planned as a claim is reused too: generic, with
    statistics from before the other agent's runs fell due (nothing is written when a
    deadline passes, so nothing makes Postgres analyze or plan again). The backlogs are
    put in place directly, with the state machine's trigger off."""
    spec = registered(runtime)
    _backlog(sql, "someone-else")
    _backlog(sql, spec.name, prefix="mine-")
    mine_later = (
        "CASE WHEN thread_id LIKE '%0' THEN 'running' ELSE 'waiting' END, "
        "wake_at = now() + interval '1 h', lease_expires_at = now() + interval '1 h'"
    )
    with sql.transaction():
        sql.execute("ALTER TABLE waystone.runs DISABLE TRIGGER USER")
        sql.execute(f"UPDATE waystone.runs SET {later} WHERE agent = 'someone-else'")
        sql.execute(f"UPDATE waystone.runs SET state = {mine_later} WHERE thread_id LIKE 'mine-%'")
        sql.execute("ALTER TABLE waystone.runs ENABLE TRIGGER USER")
    sql.execute("ALTER TABLE waystone.runs SET (autovacuum_enabled = false)")  # as they were
    sql.execute("ANALYZE waystone.runs")
    with sql.transaction():
        sql.execute("ALTER TABLE waystone.runs DISABLE TRIGGER USER")
        sql.execute(f"UPDATE waystone.runs SET {now} WHERE agent = 'someone-else'")
        sql.execute("ALTER TABLE waystone.runs ENABLE TRIGGER USER")
    queued = runtime.start(spec.name, {}).thread_id
    for agents in ([spec.name], [spec.name, "another"]):
        for plan in (_generic_claim_plan(sql, agents), _claim_plan(sql, agents=agents)):
            assert _most_rows(plan) <= HANDFUL, (kind, json.dumps(plan)[:2000])
    next_wake = "EXPLAIN (ANALYZE, FORMAT JSON) " + queries.query("next_wake")
    found = psycopg.ClientCursor(sql).execute(next_wake, {"agents": [spec.name]}).fetchone()
    assert found is not None and _most_rows(found[0][0]["Plan"]) <= HANDFUL, kind
    taken = parts(runtime).registry.claim(owner="test", lease_seconds=30, agents=[spec.name])
    assert taken is not None and taken.thread_id == queued
    theirs = parts(runtime).registry.claim(owner="test", lease_seconds=30, agents=["someone-else"])
    assert theirs is not None and theirs.thread_id.startswith("backlog-"), kind


def test_the_oldest_runnable_run_of_any_kind_is_taken_first(
    runtime: Runtime, sql: psycopg.Connection[Any]
) -> None:
    spec = registered(runtime)
    ids = [runtime.start(spec.name, {}).thread_id for _ in range(4)]
    registry = parts(runtime).registry
    for thread_id, waiting_for, wake_at in ((ids[0], "go", None), (ids[1], "never", PAST)):
        run = registry.claim(owner="setup", lease_seconds=30, thread_id=thread_id)
        assert run is not None
        registry.transition(
            thread_id,
            "waiting",
            reason="setup",
            lease_token=run.lease_token,
            waiting_for=waiting_for,
            wake_at=wake_at,
        )
    runtime.signal(ids[0], "go", {})  # the oldest: its signal has arrived
    # the next is due (ids[1]); the next holds an expired lease; the newest is queued
    assert registry.claim(owner="gone", lease_seconds=30, thread_id=ids[2]) is not None
    sql.execute(
        "UPDATE waystone.runs SET lease_expires_at = now() - interval '1 s' WHERE thread_id = %s",
        (ids[2],),
    )
    for age, thread_id in enumerate(ids[:3]):
        sql.execute(
            "UPDATE waystone.runs SET updated_at = now() - make_interval(mins => 4 - %s) "
            "WHERE thread_id = %s",
            (age, thread_id),
        )
    taken = []
    for _ in range(5):
        run = parts(runtime).registry.claim(owner="test", lease_seconds=30, agents=[spec.name])
        taken.append(run.thread_id if run else None)
    assert taken == [*ids, None]


def test_a_worker_serves_only_agents_its_runtime_has(runtime: Runtime) -> None:
    with pytest.raises(ValueError, match="names the agents it can drive"):
        parts(runtime).registry.claim(owner="test", lease_seconds=30)
    with pytest.raises(ValueError, match="not \\['nobody'\\]"):
        Worker(runtime, agents=["refund", "nobody"])
    with pytest.raises(ValueError, match="serves at least one of its runtime's agents"):
        Worker(runtime, agents=[])
    assert Worker(runtime, agents=["refund"]).agents == ["refund"]


def test_postgres_plans_each_claim_once_and_reuses_the_plan(
    runtime: Runtime, database_url: str
) -> None:
    """Claims are prepared statements: after psycopg's first five runs Postgres should
    reuse one generic plan, not plan the claim anew each time (a fresh plan of the worker's
    claim costs more than running it: 1.3-1.5 ms a claim instead of 0.75)."""
    spec = registered(runtime)
    args = {"agents": [spec.name, "refund"], "owner": "test", "lease_seconds": 30}
    args.update(reason="claimed", dead_owner=None, thread_id="nothing-by-this-name")
    with psycopg.connect(database_url, autocommit=True, prepare_threshold=0) as conn:
        for name in ("claim", "claim_named"):
            for _ in range(12):  # nothing runnable: each claim takes nothing
                assert conn.execute(queries.query(name), args).fetchone() is None
        plans = conn.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements "
            "WHERE statement LIKE '%%lease_token = r.lease_token + 1%%' "
            "AND statement NOT LIKE '%%pg_prepared_statements%%' ORDER BY prepare_time"
        ).fetchall()
    assert len(plans) == 2
    for generic, custom in plans:
        assert generic >= 6 and custom <= 6, plans
