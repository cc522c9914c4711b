"""Create or upgrade the schema: LangGraph's tables and Waystone's, idempotently.

Two processes starting at once are serialised by a Postgres advisory lock, so neither
sees a half-made schema. A fresh database gets ``schema.sql`` (the truth) and is stamped
with the newest version; an older one gets each numbered migration above its version.
Older code keeps working on a newer schema during a rolling deploy or after a rollback (it
starts without migrating anything), as long as migrations keep two rules. They add, and
replace indexes, but never remove what an older version uses. And they add no column to a
table Waystone reads with ``*`` (runs, signals, effects, run_events; a new table instead):
a process of the previous version has prepared statements whose result type would
change, and Postgres refuses them ("cached plan must not change result type") until its
connections are replaced. Migration 0002 broke that rule (``runs.wait_id``): a process
of version 1 fails such statements until it is restarted. A migration that takes several
locks on a table takes the strongest first (0004), or a claim of an older process
arriving between two of them deadlocks with it.
"""

from __future__ import annotations

import importlib.metadata
import logging
import re
import time
from importlib import resources

from waystone import sql
from waystone._checkpointing.database import Conn, Database
from waystone._retry import RetryPolicy
from waystone.errors import DatabaseUnavailable

logger = logging.getLogger(__name__)

ADVISORY_LOCK_ID = 0x5741_5953  # "WAYS"
LOCK_WAIT = RetryPolicy(base_delay_s=0.01, max_delay_s=0.5, jitter=False)  # until a deadline
BASELINE_VERSION = 1
_MIGRATION = re.compile(r"^(\d{4})_[\w-]+\.sql$")


def migration_files() -> list[tuple[int, str]]:
    """``(version, filename)`` of every numbered migration above the baseline, in order."""
    folder = resources.files(sql.__name__).joinpath("migrations")
    found: list[tuple[int, str]] = []
    if not folder.is_dir():  # no migration above the baseline yet
        return found
    for entry in folder.iterdir():
        match = _MIGRATION.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.name))
    return sorted(found)


def latest_version() -> int:
    files = migration_files()
    return max([BASELINE_VERSION, *(v for v, _ in files)])


UP_TO_DATE = """
SELECT to_regclass('public.waystone_schema_version') IS NOT NULL
   AND to_regclass('public.checkpoint_migrations') IS NOT NULL AS present
"""
VERSIONS = """
SELECT (SELECT max(version) FROM public.waystone_schema_version) AS ours,
       (SELECT max(v) FROM public.checkpoint_migrations) AS langgraph,
       (SELECT value FROM waystone.settings WHERE name = 'langgraph_set_up_by') AS set_up_by,
       (SELECT count(*) FROM pg_trigger WHERE tgname = 'waystone_fence') AS fences
"""
SET_UP_BY = """
INSERT INTO waystone.settings (name, value) VALUES ('langgraph_set_up_by', %s)
ON CONFLICT (name) DO UPDATE SET value = excluded.value
"""
SAVER_PACKAGE = "langgraph-checkpoint-postgres"


def _saver_version() -> str | None:
    """The installed version of LangGraph's Postgres saver, read from its package metadata
    (importing it costs more than the rest of a CLI command's start)."""
    try:
        return importlib.metadata.version(SAVER_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return None


def _langgraph_set_up(conn: Conn, applied: int, set_up_by: str | None) -> bool:
    """Whether LangGraph's tables have every migration of the installed saver. The version
    whose ``setup()`` last ran is recorded, so a process of that version need not count."""
    installed = _saver_version()
    if installed is not None and set_up_by == installed:
        return True
    from langgraph.checkpoint.postgres import PostgresSaver

    if applied < len(PostgresSaver.MIGRATIONS) - 1:
        return False
    if installed is not None:
        conn.execute(SET_UP_BY, (installed,))
    return True


def _up_to_date(db: Database) -> bool:
    """One look, no lock: every process start pays this, not the whole migration."""
    with db.connection() as conn:
        row = conn.execute(UP_TO_DATE).fetchone()
        if not row or not row["present"]:
            return False
        versions = conn.execute(VERSIONS).fetchone()
        if versions is None:
            return False
        ours = versions["ours"] or 0
        if ours > latest_version():
            # a newer Waystone migrated it (a rolling deploy, a rollback): it is a superset
            # of what this code needs, and never migrated down
            logger.warning(
                "the database's schema is newer than this Waystone's; upgrade this process",
                extra={"database_version": ours, "code_version": latest_version()},
            )
        if ours < latest_version() or versions["fences"] < 3:
            return False
        return _langgraph_set_up(conn, versions["langgraph"] or 0, versions["set_up_by"])


def script(conn: Conn, text: str) -> None:
    """Run a file of several statements. Never prepared: Postgres cannot prepare more than
    one command, and a caller's connection may prepare every statement
    (``prepare_threshold=0``, as LangGraph's own saver connects)."""
    conn.execute(text, prepare=False)


def migrate(db: Database) -> int:
    """Bring the database to the newest schema; return the version it is at."""
    if _up_to_date(db):
        return latest_version()
    with db.connection() as lock_conn:
        _acquire(lock_conn)
        try:
            return _migrate_locked(db)
        finally:
            lock_conn.execute("SELECT pg_advisory_unlock(%s)", (ADVISORY_LOCK_ID,))


def _acquire(conn: Conn, timeout_s: float = 120.0) -> None:
    """Take the migration lock, retrying a non-blocking try.

    A blocking ``pg_advisory_lock`` would hold a snapshot while it waits, and LangGraph's
    ``CREATE INDEX CONCURRENTLY`` in the holder waits for every such snapshot: a deadlock.
    """
    deadline, attempt = time.monotonic() + timeout_s, 0
    while True:
        row = conn.execute("SELECT pg_try_advisory_lock(%s) AS ok", (ADVISORY_LOCK_ID,)).fetchone()
        if row and row["ok"]:
            return
        if time.monotonic() > deadline:
            raise DatabaseUnavailable(
                f"another process has held the migration lock for {timeout_s:g}s; "
                f"is a migration stuck? (see pg_locks, objid {ADVISORY_LOCK_ID})"
            )
        attempt += 1
        time.sleep(LOCK_WAIT.delay(attempt, 0.0))


def _migrate_locked(db: Database) -> int:
    with db.transaction() as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS public.waystone_schema_version "
            "(version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        row = conn.execute(
            "SELECT max(version) AS v FROM public.waystone_schema_version"
        ).fetchone()
        current = int(row["v"]) if row and row["v"] is not None else 0
        if current > latest_version():
            return latest_version()  # a newer Waystone's: migrations only add, never undo
        if current == 0:
            script(conn, sql.read("schema.sql"))
            conn.execute(
                "INSERT INTO public.waystone_schema_version (version) VALUES (%s)",
                (latest_version(),),
            )
            current = latest_version()
            logger.info("created waystone schema", extra={"version": current})
        for version, name in migration_files():
            if version > current:
                script(conn, sql.read(f"migrations/{name}"))
                conn.execute(
                    "INSERT INTO public.waystone_schema_version (version) VALUES (%s)", (version,)
                )
                current = version
    from langgraph.checkpoint.postgres import PostgresSaver

    with db.connection() as conn:  # a pool's, or a caller's one connection
        PostgresSaver(conn).setup()
    with db.transaction() as conn:
        if (installed := _saver_version()) is not None:
            conn.execute(SET_UP_BY, (installed,))
        row = conn.execute(
            "SELECT count(*) AS n FROM pg_trigger WHERE tgname = 'waystone_fence'"
        ).fetchone()
        if row is None or row["n"] < 3:
            script(conn, sql.read("langgraph_fence.sql"))
    return current
