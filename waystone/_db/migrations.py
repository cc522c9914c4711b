"""Create or upgrade the schema: LangGraph's tables and Waystone's, idempotently.

Two processes migrating at once are serialised by a Postgres advisory lock, so neither
sees a half-made schema. A fresh database gets ``schema.sql`` (the head) and is stamped
with the newest version; an older one gets each numbered migration above its version,
``0001_baseline.sql`` being the schema as first released. Migrations run when asked
(``waystone migrate``, ``Runtime(migrate=True)``, a saver's ``setup()``); otherwise a
process only looks, and refuses a database that is behind (:func:`require_current`).

Older code keeps working on a newer schema during a rolling deploy or after a rollback, as
long as migrations add, and replace indexes, but never remove what an older version uses.
A migration that takes several locks on a table takes the strongest first (0004), or a
claim of an older process arriving between two of them deadlocks with it.
"""

from __future__ import annotations

import importlib.metadata
import logging
import re
import time
from dataclasses import dataclass
from importlib import resources
from typing import Any

from waystone import sql
from waystone._db.database import Conn, Database
from waystone.errors import DatabaseUnavailable, SchemaBehind

logger = logging.getLogger(__name__)

ADVISORY_LOCK_ID = 0x5741_5953  # "WAYS"
BASELINE_VERSION = 1
_MIGRATION = re.compile(r"^(\d{4})_[\w-]+\.sql$")
SAVER_PACKAGE = "langgraph-checkpoint-postgres"
FRESH = "schema.sql"
LANGGRAPH = f"{SAVER_PACKAGE} setup()"
FENCE = "langgraph_fence.sql"


@dataclass(frozen=True)
class Step:
    """One thing a migration applies: a file of ``waystone/sql/`` (``version`` is the one it
    stamps), or LangGraph's own setup (``version`` None)."""

    name: str
    version: int | None = None


def migration_files() -> list[tuple[int, str]]:
    """``(version, filename)`` of every numbered migration, the baseline first."""
    folder = resources.files(sql.__name__).joinpath("migrations")
    found: list[tuple[int, str]] = []
    for entry in folder.iterdir():
        match = _MIGRATION.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.name))
    return sorted(found)


def latest_version() -> int:
    return max([BASELINE_VERSION, *(v for v, _ in migration_files())])


def plan(
    version: int, files: list[tuple[int, str]], *, langgraph: bool, fenced: bool
) -> list[Step]:
    """What a database at ``version`` (0: no Waystone schema) needs, in order: ``schema.sql``
    when fresh, else each migration above its version; then LangGraph's setup and the fence
    when they are missing. ``langgraph``: LangGraph's tables are set up."""
    if version == 0:
        steps = [Step(FRESH, max([BASELINE_VERSION, *(v for v, _ in files)]))]
    else:
        steps = [Step(name, v) for v, name in files if v > version]
    if not langgraph:
        steps.append(Step(LANGGRAPH))
    if not fenced or not langgraph:
        steps.append(Step(FENCE))
    return steps


@dataclass(frozen=True)
class Look:
    """What one look at a database finds: Waystone's version (0: none), and whether
    LangGraph's tables are set up for the installed saver and fenced."""

    version: int
    langgraph: bool
    fenced: bool

    def pending(self) -> list[Step]:
        files = migration_files()
        return plan(self.version, files, langgraph=self.langgraph, fenced=self.fenced)


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
        conn.execute(sql.query("record_langgraph_set_up_by"), {"version": installed})
    return True


def look(db: Database) -> Look:
    """One look, no lock: every process start pays this, not the whole migration."""
    with db.connection() as conn:
        present = conn.execute(sql.query("schema_present")).fetchone()
        if present is None or not present["ours"]:
            return Look(0, langgraph=False, fenced=False)
        if not present["langgraph"]:
            row = conn.execute(sql.query("schema_version")).fetchone()
            return Look(_version(row), langgraph=False, fenced=False)
        versions = conn.execute(sql.query("schema_versions")).fetchone()
        if versions is None:
            return Look(0, langgraph=False, fenced=False)
        ours = versions["ours"] or 0
        if ours > latest_version():
            # a newer Waystone migrated it (a rolling deploy, a rollback): it is a superset
            # of what this code needs, and never migrated down
            logger.warning(
                "the database's schema is newer than this Waystone's; upgrade this process",
                extra={"database_version": ours, "code_version": latest_version()},
            )
        langgraph = _langgraph_set_up(conn, versions["langgraph"] or 0, versions["set_up_by"])
        return Look(ours, langgraph=langgraph, fenced=versions["fences"] >= 3)


def _version(row: dict[str, Any] | None) -> int:
    return int(row["version"]) if row and row["version"] is not None else 0


def require_current(db: Database) -> None:
    """Refuse a database this code cannot run on until it is migrated, naming the command
    that migrates it and the versions."""
    found = look(db)
    pending = found.pending()
    if not pending:
        return
    if found.version == 0:
        what = "has no Waystone schema"
    elif found.version < latest_version():
        what = f"is at schema version {found.version}, this Waystone needs {latest_version()}"
    else:
        what = f"lacks {', '.join(step.name for step in pending)}"
    raise SchemaBehind(
        f"the database {what}: run `waystone migrate` (`--dry-run` lists what it would "
        "apply; from Python: Runtime(migrate=True))"
    )


def script(conn: Conn, text: str) -> None:
    """Run a file of several statements. Never prepared: Postgres cannot prepare more than
    one command, and a caller's connection may prepare every statement
    (``prepare_threshold=0``, as LangGraph's own saver connects)."""
    conn.execute(text, prepare=False)


def migrate(db: Database) -> int:
    """Bring the database to the newest schema; return the version it is at."""
    if not look(db).pending():
        return latest_version()
    with db.connection() as lock_conn:
        _acquire(lock_conn)
        try:
            return _migrate_locked(db)
        finally:
            lock_conn.execute(sql.query("migration_unlock"), {"lock": ADVISORY_LOCK_ID})


def _acquire(conn: Conn, timeout_s: float = 120.0) -> None:
    """Take the migration lock, retrying a non-blocking try.

    A blocking ``pg_advisory_lock`` would hold a snapshot while it waits, and LangGraph's
    ``CREATE INDEX CONCURRENTLY`` in the holder waits for every such snapshot: a deadlock.
    """
    deadline = time.monotonic() + timeout_s
    delay = 0.01
    while True:
        row = conn.execute(sql.query("try_migration_lock"), {"lock": ADVISORY_LOCK_ID}).fetchone()
        if row and row["ok"]:
            return
        if time.monotonic() > deadline:
            raise DatabaseUnavailable(
                f"another process has held the migration lock for {timeout_s:g}s; "
                f"is a migration stuck? (see pg_locks, objid {ADVISORY_LOCK_ID})"
            )
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def _migrate_locked(db: Database) -> int:
    with db.transaction() as conn:
        conn.execute(sql.query("create_schema_version"))
        current = _version(conn.execute(sql.query("schema_version")).fetchone())
        if current > latest_version():
            return latest_version()  # a newer Waystone's: migrations only add, never undo
        for step in plan(current, migration_files(), langgraph=True, fenced=True):
            script(conn, sql.read(step.name if step.name == FRESH else f"migrations/{step.name}"))
            conn.execute(sql.query("stamp_schema_version"), {"version": step.version})
            current = step.version or current
            logger.info("migrated waystone schema", extra={"step": step.name, "version": current})
    from langgraph.checkpoint.postgres import PostgresSaver

    with db.connection() as conn:  # a pool's, or a caller's one connection
        PostgresSaver(conn).setup()
    with db.transaction() as conn:
        if (installed := _saver_version()) is not None:
            conn.execute(sql.query("record_langgraph_set_up_by"), {"version": installed})
        row = conn.execute(sql.query("langgraph_fences")).fetchone()
        if row is None or row["n"] < 3:
            script(conn, sql.read(FENCE))
    return current
