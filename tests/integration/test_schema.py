"""The schema on a real Postgres: the state machine is enforced by the database; the
baseline and the migrations after it make what schema.sql makes; migrations are idempotent
and safe when two processes start at once."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import psycopg
import pytest

from tests.support.migrations import (
    FIRST_0004,
    at_baseline,
    at_version,
    index_def,
    migration,
    schema_dump,
    version,
)
from waystone._db.database import Database
from waystone._db.migrations import latest_version, migrate
from waystone._runs.states import STATES, is_allowed, transition_pairs
from waystone.config import Settings
from waystone.errors import SchemaBehind
from waystone.runtime import Runtime


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


def _migrate(url: str) -> int:
    db = Database.open(Settings(database_url=url))
    try:
        return migrate(db)
    finally:
        db.close()


def test_a_database_at_the_baseline_migrates_to_what_schema_sql_makes(
    database_url: str, empty_database_url: str
) -> None:
    """The frozen baseline and every numbered migration after it, applied in order, make
    the schema a fresh database gets from schema.sql: pg_dump cannot tell them apart."""
    at_baseline(empty_database_url)
    with psycopg.connect(empty_database_url, autocommit=True) as old:
        _new_run(old, "waits")  # waiting on a deadline when the upgrade comes
        _force_state(old, "waits", "waiting")
        old.execute(
            "UPDATE waystone.runs SET wake_at = now() + interval '1 h', "
            "evidence = '{\"interrupt_id\": \"i-1\"}' WHERE thread_id = 'waits'"
        )
    assert _migrate(empty_database_url) == latest_version() == 19
    assert schema_dump(empty_database_url) == schema_dump(database_url)
    with psycopg.connect(empty_database_url) as upgraded:
        waits = upgraded.execute(
            "SELECT wait_id FROM waystone.runs WHERE thread_id = 'waits'"
        ).fetchone()
    assert waits == ("i-1",)  # its deadline is its wait's


def test_a_database_that_applied_the_first_0004_is_repaired(
    database_url: str, empty_database_url: str
) -> None:
    """0004 was edited after databases had applied it: 0017 gives them today's index."""
    at_version(empty_database_url, [migration(1), migration(2), migration(3), (4, FIRST_0004)])
    with psycopg.connect(empty_database_url) as old:
        before = index_def(old, "runs_lease_agent_idx")
    assert "lease_expires_at NULLS FIRST" in before
    assert _migrate(empty_database_url) == latest_version()
    with psycopg.connect(empty_database_url) as repaired, psycopg.connect(database_url) as fresh:
        assert index_def(repaired, "runs_lease_agent_idx") == index_def(
            fresh, "runs_lease_agent_idx"
        )
    assert schema_dump(empty_database_url) == schema_dump(database_url)


def test_the_repair_leaves_a_current_database_as_it_is(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    before = schema_dump(database_url)
    oid = "SELECT 'waystone.runs_lease_agent_idx'::regclass::oid"
    index = sql.execute(oid).fetchone()
    sql.execute(migration(17)[1].read_text(encoding="utf-8"), prepare=False)
    assert sql.execute(oid).fetchone() == index  # not rebuilt
    assert schema_dump(database_url) == before


def test_a_runtime_refuses_a_database_behind_and_migrates_it_when_asked(
    empty_database_url: str,
) -> None:
    at_baseline(empty_database_url)
    settings = Settings(database_url=empty_database_url)
    with pytest.raises(SchemaBehind, match=r"version 1, .* needs 19: run `waystone migrate`"):
        Runtime(settings)
    assert version(empty_database_url) == 1
    with Runtime(settings, migrate=True) as rt:
        assert rt.list() == []
    assert version(empty_database_url) == latest_version()
    with Runtime(settings) as rt:  # at the head: only a look
        assert rt.list() == []


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
