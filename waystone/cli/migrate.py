"""``waystone migrate [--dry-run]``: bring the database's schema up to date, explicitly.

A database the user gives is never migrated behind their back: a deploy runs this first
(see docs/migrations.md), and a process that finds its database behind says so.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from waystone.cli.app import DbOpt, JsonOpt, app, emit, guard, out
from waystone.config import Settings
from waystone.errors import BadInput

DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="List what would be applied, in order; apply nothing.")
]


@app.command("migrate")
def migrate_cmd(
    dry_run: DryRunOpt = False, as_json: JsonOpt = False, database_url: DbOpt = None
) -> None:
    """Bring the database's schema up to date: list the migrations it lacks, in order, and
    apply them (under a lock: two at once wait for each other)."""
    from waystone._db import migrations
    from waystone._db.database import Database

    def body() -> None:
        try:
            settings = Settings.from_env(database_url=database_url)
        except ValueError as exc:
            raise BadInput(str(exc)) from exc
        db = Database.open(settings)
        try:
            found = migrations.look(db)
            pending = found.pending()
            version = found.version
            if pending and not dry_run:
                version = migrations.migrate(db)
        finally:
            db.close()
        data: dict[str, Any] = {
            "database_version": found.version,
            "code_version": migrations.latest_version(),
            "pending": [{"name": s.name, "version": s.version} for s in pending],
            "applied": bool(pending) and not dry_run,
            "version": version,
        }
        emit(as_json, data, lambda: _render(data, dry_run))

    guard(body)


def _render(data: dict[str, Any], dry_run: bool) -> None:
    at = data["database_version"] or "none (an empty database)"
    out.print(f"schema version: {at}; this Waystone's: {data['code_version']}", highlight=False)
    if not data["pending"]:
        out.print("up to date: nothing to apply", highlight=False)
        return
    out.print("would apply, in order:" if dry_run else "applied, in order:", highlight=False)
    for step in data["pending"]:
        out.print(f"  {step['name']}", highlight=False)
    if dry_run:
        out.print("nothing applied (dry run): `waystone migrate` applies them", highlight=False)
    else:
        out.print(f"now at version {data['version']}", highlight=False)
