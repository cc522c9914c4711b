"""The schema on a real Postgres: the state machine is enforced by the database, and
migrations are idempotent and safe when two processes start at once."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import psycopg
import pytest

from waystone._db.database import Database
from waystone._db.migrations import latest_version, migrate
from waystone._runs.states import STATES, is_allowed, transition_pairs
from waystone.config import Settings


def _new_run(sql: psycopg.Connection[Any], thread_id: str) -> None:
    sql.execute("INSERT INTO waystone.runs (thread_id, agent) VALUES (%s, 'refund')", (thread_id,))


def _force_state(sql: psycopg.Connection[Any], thread_id: str, state: str) -> None:
    """Walk a run to ``state`` through allowed transitions only."""
    paths = {
        "queued": [],
        "running": ["running"],
        "waiting": ["running", "waiting"],
        "done": ["running", "done"],
        "failed": ["running", "failed"],
        "needs-human": ["running", "needs-human"],
    }
    for step in paths[state]:
        sql.execute(
            "UPDATE waystone.runs SET state = %s, reason = 'setup' WHERE thread_id = %s",
            (step, thread_id),
        )


def test_database_table_mirrors_the_code(sql: psycopg.Connection[Any]) -> None:
    rows = sql.execute(
        "SELECT from_state, to_state FROM waystone.allowed_transitions ORDER BY 1, 2"
    ).fetchall()
    assert [tuple(r) for r in rows] == transition_pairs()


@pytest.mark.parametrize("src", STATES)
def test_every_transition_is_checked_by_postgres(sql: psycopg.Connection[Any], src: str) -> None:
    for dst in STATES:
        if dst == src:
            continue
        thread_id = f"t-{src}-{dst}"
        _new_run(sql, thread_id)
        _force_state(sql, thread_id, src)
        update = "UPDATE waystone.runs SET state = %s, reason = 'test' WHERE thread_id = %s"
        if is_allowed(src, dst):
            sql.execute(update, (dst, thread_id))
            event = sql.execute(
                "SELECT from_state, to_state, reason FROM waystone.run_events "
                "WHERE thread_id = %s ORDER BY id DESC LIMIT 1",
                (thread_id,),
            ).fetchone()
            assert event == (src, dst, "test")
        else:
            with pytest.raises(psycopg.DatabaseError, match="not allowed") as err:
                sql.execute(update, (dst, thread_id))
            assert err.value.sqlstate == "WS409"
            state = sql.execute(
                "SELECT state FROM waystone.runs WHERE thread_id = %s", (thread_id,)
            ).fetchone()
            assert state == (src,)


def test_a_run_is_born_queued_and_a_transition_needs_a_reason(
    sql: psycopg.Connection[Any],
) -> None:
    with pytest.raises(psycopg.DatabaseError, match="created queued"):
        sql.execute(
            "INSERT INTO waystone.runs (thread_id, agent, state) VALUES ('x', 'a', 'running')"
        )
    _new_run(sql, "y")
    with pytest.raises(psycopg.DatabaseError, match="needs a reason"):
        sql.execute("UPDATE waystone.runs SET state = 'running', reason = '' WHERE thread_id = 'y'")


def test_migrate_is_idempotent(database_url: str) -> None:
    db = Database.open(Settings(database_url=database_url))
    try:
        assert migrate(db) == latest_version()
        assert migrate(db) == latest_version()
        with db.connection() as conn:
            count = conn.execute("SELECT count(*) AS n FROM waystone_schema_version").fetchone()
            tables = conn.execute(
                "SELECT count(*) AS n FROM pg_tables WHERE tablename IN "
                "('checkpoints', 'checkpoint_blobs', 'checkpoint_writes')"
            ).fetchone()
    finally:
        db.close()
    assert count is not None and count["n"] == 1
    assert tables is not None and tables["n"] == 3


def test_a_database_at_the_baseline_is_upgraded_to_what_a_fresh_one_has(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    """Each numbered migration brings a database made by an older Waystone (version 1) to
    the schema a fresh one gets from schema.sql: the same indexes, columns (in any order)
    and functions, the newest version."""
    indexes = "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'waystone'"
    columns = (
        "SELECT table_name, column_name, data_type, is_nullable, column_default "
        "FROM information_schema.columns WHERE table_schema = 'waystone'"
    )
    functions = (
        "SELECT p.proname, pg_get_functiondef(p.oid) FROM pg_proc p "
        "JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'waystone'"
    )
    checks = (
        "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE connamespace = 'waystone'::regnamespace AND contype = 'c'"
    )
    queries = (indexes, columns, functions, checks)
    fresh = [sorted(sql.execute(q).fetchall()) for q in queries]
    _new_run(sql, "waits")  # waiting on a deadline when the upgrade comes
    _force_state(sql, "waits", "waiting")
    sql.execute(
        "UPDATE waystone.runs SET wake_at = now() + interval '1 h', "
        "evidence = '{\"interrupt_id\": \"i-1\"}' WHERE thread_id = 'waits'"
    )
    sql.execute("DROP INDEX waystone.runs_queued_agent_idx")  # what 0002 adds
    for index in ("runs_wake_agent_idx", "runs_lease_agent_idx"):  # 0004's, and what it drops
        sql.execute(f"DROP INDEX waystone.{index}")
    sql.execute("CREATE INDEX runs_wake_idx ON waystone.runs (wake_at) WHERE state = 'waiting'")
    sql.execute(
        "CREATE INDEX runs_lease_idx ON waystone.runs (lease_expires_at) WHERE state = 'running'"
    )
    sql.execute("DROP FUNCTION waystone.each_agent")
    sql.execute("DROP TABLE waystone.web_sessions")  # what 0005 adds
    sql.execute("DROP TABLE waystone.effect_deadlines")  # what 0006 adds
    sql.execute("DROP TABLE waystone.threads")  # what 0008 adds
    sql.execute("DROP TABLE waystone.crons, waystone.cron_ticks")  # what 0010 adds
    sql.execute("DROP FUNCTION waystone.notify_crons")
    sql.execute("DROP TRIGGER runs_begin_pending ON waystone.runs")  # what 0009 adds
    sql.execute("DROP FUNCTION waystone.begin_pending_on_end, waystone.begin_pending")
    sql.execute("DROP TABLE waystone.pending_runs")
    sql.execute("DROP TABLE waystone.webhooks")  # what 0011 adds, with its trigger
    sql.execute("DROP FUNCTION waystone.webhooks_due CASCADE")
    sql.execute("ALTER TABLE waystone.runs DROP COLUMN wait_id")
    sql.execute(  # the statuses before 0013's 'interrupted'
        "ALTER TABLE waystone.effects DROP CONSTRAINT effects_status_check, "
        "ADD CONSTRAINT effects_status_check CHECK (status IN "
        "('intent', 'applied', 'confirmed', 'failed', 'unknown'))"
    )
    sql.execute("DROP INDEX waystone.run_events_resumed_idx")  # what 0015 adds
    sql.execute("ALTER TABLE waystone.effects DROP COLUMN tool_call_id")  # what 0014 adds
    sql.execute("DROP FUNCTION waystone.settle_signals")
    for function in ("check_fence", "check_transition", "notify_runnable"):  # 0003's
        sql.execute(
            f"CREATE OR REPLACE FUNCTION waystone.{function}() RETURNS trigger "
            "LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$"
        )
    sql.execute("DELETE FROM waystone_schema_version")
    sql.execute("INSERT INTO waystone_schema_version (version) VALUES (1)")
    db = Database.open(Settings(database_url=database_url))
    try:
        assert migrate(db) == latest_version() == 16
    finally:
        db.close()
    assert [sorted(sql.execute(q).fetchall()) for q in queries] == fresh
    waits = sql.execute("SELECT wait_id FROM waystone.runs WHERE thread_id = 'waits'").fetchone()
    assert waits == ("i-1",)  # its deadline is its wait's


def test_two_processes_migrate_an_empty_database_at_once(empty_database_url: str) -> None:
    code = (
        "from waystone._db.database import Database;"
        "from waystone._db.migrations import migrate;"
        "from waystone.config import Settings;"
        f"db = Database.open(Settings(database_url={empty_database_url!r}));"
        "print(migrate(db)); db.close()"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    try:
        results = [p.communicate(timeout=60) for p in procs]
    finally:
        for p in procs:
            p.kill()
            p.communicate()
    assert [p.returncode for p in procs] == [0, 0, 0], [r[1] for r in results]
    assert {r[0].strip() for r in results} == {str(latest_version())}
    with psycopg.connect(empty_database_url) as conn:
        row = conn.execute("SELECT count(*) FROM waystone.allowed_transitions").fetchone()
    assert row == (13,)


def test_a_database_a_newer_waystone_migrated_is_left_as_it_is(
    database_url: str, sql: psycopg.Connection[Any], caplog: pytest.LogCaptureFixture
) -> None:
    """During a rolling deploy (or after a rollback) older code meets a newer schema: it
    starts without migrating anything, and says so."""
    sql.execute(
        "INSERT INTO waystone_schema_version (version) VALUES (%s)", (latest_version() + 1,)
    )
    db = Database.open(Settings(database_url=database_url))
    try:
        with caplog.at_level("WARNING", logger="waystone._db.migrations"):
            assert migrate(db) == latest_version()
    finally:
        db.close()
    versions = [r[0] for r in sql.execute("SELECT version FROM waystone_schema_version ORDER BY 1")]
    assert versions == [latest_version(), latest_version() + 1]
    assert "newer than this Waystone's" in caplog.text
