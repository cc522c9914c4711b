"""What a test reads back from the database: one value, a run's state and lease, what a
worker wrote for a thread, the runs a cron started, what a refused request must leave
alone, a thread's signals."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql as pgsql


def one(sql: psycopg.Connection[Any], query: str, *params: Any) -> Any:
    """The first column of the one row ``query`` finds."""
    row = sql.execute(query, params).fetchone()
    assert row is not None
    return row[0]


def run_state(sql: psycopg.Connection[Any], thread_id: str) -> str:
    return str(one(sql, "SELECT state FROM waystone.runs WHERE thread_id = %s", thread_id))


def lease_expired(sql: psycopg.Connection[Any], thread_id: str) -> bool:
    """Whether the lease on the thread's run has run out (by the database's clock)."""
    query = "SELECT lease_expires_at < clock_timestamp() FROM waystone.runs WHERE thread_id = %s"
    return bool(one(sql, query, thread_id))


def lock_waits(sql: psycopg.Connection[Any], like: str = "%") -> int:
    """How many statements whose text is ``like`` wait on a lock now."""
    query = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE %s"
    return int(one(sql, query, like))


def effects(
    sql: psycopg.Connection[Any],
    thread_id: str,
    *columns: str,
    order: str = "ordinal",
) -> list[tuple[Any, ...]]:
    """Those ``columns`` (tool, status, attempts unless named) of each of the thread's
    effects, in ``order``."""
    query = pgsql.SQL("SELECT {} FROM waystone.effects WHERE thread_id = %s ORDER BY {}").format(
        pgsql.SQL(", ").join(map(pgsql.Identifier, columns or ("tool", "status", "attempts"))),
        pgsql.Identifier(order),
    )
    return sql.execute(query, (thread_id,)).fetchall()


def writes(sql: psycopg.Connection[Any], thread_id: str) -> tuple[Any, ...]:
    """Everything a worker could write for a run, in any checkpoint namespace."""
    return (
        sql.execute(
            "SELECT (SELECT count(*) FROM checkpoints WHERE thread_id = %s),"
            " (SELECT count(*) FROM checkpoint_writes WHERE thread_id = %s),"
            " (SELECT count(*) FROM checkpoint_blobs WHERE thread_id = %s),"
            " (SELECT count(*) FROM waystone.run_events WHERE thread_id = %s),"
            " (SELECT max(updated_at) FROM waystone.effects WHERE thread_id = %s)",
            (thread_id,) * 5,
        ).fetchone()
        or ()
    )


def cron_runs(sql: psycopg.Connection[Any], cron_id: str) -> list[tuple[str, str, str]]:
    """(thread id, start key, state) of every run a cron started, current or past."""
    rows = sql.execute(
        "SELECT thread_id, start_key, state FROM waystone.runs WHERE start_key LIKE %(k)s "
        "UNION ALL SELECT thread_id, start_key, state FROM waystone.thread_runs "
        "WHERE start_key LIKE %(k)s",
        {"k": f"cron:{cron_id}:%"},
    ).fetchall()
    return [tuple(r) for r in rows]  # type: ignore[misc]


def changes(sql: psycopg.Connection[Any]) -> tuple[Any, ...]:
    """Everything a refused request must leave alone."""
    row = sql.execute(
        "SELECT (SELECT count(*) FROM waystone.signals),"
        " (SELECT count(*) FROM waystone.run_events),"
        " (SELECT count(*) FROM waystone.effects),"
        " (SELECT string_agg(thread_id || ':' || state, ',' ORDER BY thread_id)"
        "  FROM waystone.runs)"
    ).fetchone()
    assert row is not None
    return tuple(row)


def signals(sql: psycopg.Connection[Any], thread_id: str, name: str) -> list[Any]:
    return sql.execute(
        "SELECT payload, dedupe_key, actor FROM waystone.signals"
        " WHERE thread_id = %s AND name = %s ORDER BY id",
        (thread_id, name),
    ).fetchall()
