"""``waystone migrate``: a database the user gives is migrated when they say so, and a
command on a database behind says what to run."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Cli
from tests.support.migrations import MIGRATIONS, at_baseline, version
from tests.support.outputs import ok
from waystone._db.migrations import latest_version


def test_dry_run_at_the_baseline_lists_what_it_would_apply_and_applies_nothing(
    empty_database_url: str, tmp_path: Path
) -> None:
    at_baseline(empty_database_url)
    cli = Cli(empty_database_url, None, tmp_path)
    above = sorted(MIGRATIONS.glob("[0-9]*.sql"))[1:]
    dry = ok(cli("migrate", "--dry-run", "--json"))
    assert dry == {
        "database_version": 1,
        "code_version": latest_version(),
        "pending": [{"name": p.name, "version": int(p.name[:4])} for p in above],
        "applied": False,
        "version": 1,
    }
    human = cli("migrate", "--dry-run")
    assert human.returncode == 0, human.stderr
    lines = human.stdout.splitlines()
    assert lines[0] == f"schema version: 1; this Waystone's: {latest_version()}"
    assert lines[1:-1] == ["would apply, in order:", *(f"  {p.name}" for p in above)]
    assert "nothing applied" in lines[-1]
    assert version(empty_database_url) == 1

    refused = cli("list")
    assert refused.returncode == 6, refused.stderr
    assert f"schema version 1, this Waystone needs {latest_version()}" in refused.stderr
    assert "run `waystone migrate`" in refused.stderr
    assert version(empty_database_url) == 1  # a command that only looks migrates nothing

    applied = ok(cli("migrate", "--json"))
    assert (applied["applied"], applied["version"]) == (True, latest_version())
    assert version(empty_database_url) == latest_version()
    assert ok(cli("migrate", "--dry-run", "--json"))["pending"] == []
    assert cli("list").returncode == 0


def test_an_empty_database_is_refused_until_migrated(
    empty_database_url: str, tmp_path: Path
) -> None:
    cli = Cli(empty_database_url, None, tmp_path)
    refused = cli("start", "--agent", "refund", "--input", "{}")
    assert refused.returncode == 6
    assert "has no Waystone schema: run `waystone migrate`" in refused.stderr
    pending = ok(cli("migrate", "--dry-run", "--json"))["pending"]
    assert [p["name"] for p in pending] == [
        "schema.sql",
        "langgraph-checkpoint-postgres setup()",
        "langgraph_fence.sql",
    ]
    assert pending[0]["version"] == latest_version()
    assert ok(cli("migrate", "--json"))["version"] == latest_version()


def test_the_demo_migrates_the_database_it_is_given(
    empty_database_url: str, tmp_path: Path
) -> None:
    """The README's first command needs no second one, on a new database too."""
    data = ok(Cli(empty_database_url, None, tmp_path)("demo", "--approve", "--json"))
    assert data["state"] == "done"
    assert version(empty_database_url) == latest_version()


def test_bad_settings_exit_2(empty_database_url: str, tmp_path: Path) -> None:
    bad = Cli(empty_database_url, None, tmp_path)(
        "migrate", env={"WAYSTONE_PREPARE_THRESHOLD": "many"}
    )
    assert bad.returncode == 2 and "many" in bad.stderr
