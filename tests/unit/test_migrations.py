"""The migrations as files: a manifest of their hashes catches one edited after release,
and what a database at a version needs is decided without Postgres."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.migrations import MIGRATIONS, manifest_problems
from waystone._db.migrations import FENCE, FRESH, LANGGRAPH, Step, latest_version, plan
from waystone._runs.parts import migrates
from waystone.config import Settings

FILES = [(1, "0001_baseline.sql"), (2, "0002_a.sql"), (3, "0003_b.sql")]


def test_every_migration_is_in_the_manifest_as_it_was_released() -> None:
    assert manifest_problems(MIGRATIONS) == []


def test_an_edited_migration_fails_the_manifest_check(tmp_path: Path) -> None:
    copy = shutil.copytree(MIGRATIONS, tmp_path / "migrations")
    with (copy / "0004_claims_per_agent.sql").open("a", encoding="utf-8") as edited:
        edited.write("DROP INDEX IF EXISTS waystone.runs_wake_agent_idx;\n")
    (problem,) = manifest_problems(copy)
    assert problem.startswith("0004_claims_per_agent.sql was edited after it was released")
    assert "write a new migration instead" in problem


def test_a_migration_missing_from_the_manifest_or_the_folder_is_named(tmp_path: Path) -> None:
    copy = shutil.copytree(MIGRATIONS, tmp_path / "migrations")
    (copy / "0099_new.sql").write_text("SELECT 1;\n")
    (copy / "0016_settled_absent_effects.sql").unlink()
    assert manifest_problems(copy) == [
        "0099_new.sql is not in manifest.txt: add its sha256sum line",
        "0016_settled_absent_effects.sql is in manifest.txt but missing",
    ]


def test_the_baseline_is_version_1_and_the_versions_have_no_gap() -> None:
    versions = [int(p.name[:4]) for p in sorted(MIGRATIONS.glob("[0-9]*.sql"))]
    assert versions == list(range(1, latest_version() + 1))
    assert (MIGRATIONS / "0001_baseline.sql").exists()


def test_a_fresh_database_gets_the_head_schema_stamped_with_the_newest_version() -> None:
    assert plan(0, FILES, langgraph=False, fenced=False) == [
        Step(FRESH, 3),
        Step(LANGGRAPH),
        Step(FENCE),
    ]


def test_a_database_at_a_version_gets_each_migration_above_it_in_order() -> None:
    assert plan(1, FILES, langgraph=True, fenced=True) == [
        Step("0002_a.sql", 2),
        Step("0003_b.sql", 3),
    ]
    assert plan(3, FILES, langgraph=True, fenced=True) == []
    assert plan(4, FILES, langgraph=True, fenced=True) == []  # a newer Waystone's
    assert plan(3, FILES, langgraph=True, fenced=False) == [Step(FENCE)]
    # LangGraph's tables set up again are fenced again
    assert plan(3, FILES, langgraph=False, fenced=True) == [Step(LANGGRAPH), Step(FENCE)]


def test_only_the_embedded_database_is_migrated_unasked() -> None:
    given = Settings(database_url="postgresql://db.example/app")
    assert migrates(Settings(), None) is True
    assert migrates(given, None) is False
    assert migrates(given, True) is True
    assert migrates(Settings(), False) is False
