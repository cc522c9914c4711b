"""Named queries: a shared part is included where a query names it, a bad include is
an error that names it and its file, any package's file of named statements is read the
same way, and an identifier is composed quoted."""

from __future__ import annotations

from pathlib import Path

import pytest

from waystone import sql


def test_both_claims_end_with_the_shared_take() -> None:
    take = sql.query("claim_take")
    assert sql.query("claim").endswith(take) and sql.query("claim_named").endswith(take)
    assert "-- include:" not in sql.query("claim") + sql.query("claim_named")


def test_an_include_of_a_part_that_is_not_there_names_it() -> None:
    with pytest.raises(ValueError, match="includes 'tail', which it does not define"):
        sql.expand({"q": "SELECT 1\n-- include: tail"})


def test_an_included_part_includes_nothing() -> None:
    found = {"q": "WITH a AS (SELECT 1)\n-- include: mid", "mid": "-- include: tail", "tail": ""}
    with pytest.raises(ValueError, match="includes 'mid', which includes another part"):
        sql.expand(found)


def test_an_identifier_is_composed_quoted_never_pasted() -> None:
    assert sql.composed("listen", channel="waystone_runnable").as_string() == (
        'LISTEN "waystone_runnable";'
    )
    # a name that is not a plain identifier stays one identifier, quotes doubled
    hostile = sql.composed("listen", channel='x"; DROP TABLE waystone.runs; --')
    assert hostile.as_string() == 'LISTEN "x""; DROP TABLE waystone.runs; --";'


def test_any_package_file_of_named_statements_is_read_and_named_in_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "named_sql_fixture"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "good.sql").write_text(
        "-- name: head\nSELECT a FROM t\n\n-- name: one\n-- include: head\nWHERE a = ?;\n"
    )
    (package / "twice.sql").write_text("-- name: q\nSELECT 1;\n-- name: q\nSELECT 2;\n")
    (package / "missing.sql").write_text("-- name: q\n-- include: tail\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert sql.named("named_sql_fixture", "good.sql")["one"] == "SELECT a FROM t\nWHERE a = ?;"
    with pytest.raises(ValueError, match="'q' is defined twice in twice.sql"):
        sql.named("named_sql_fixture", "twice.sql")
    with pytest.raises(ValueError, match="missing.sql includes 'tail', which it does not"):
        sql.named("named_sql_fixture", "missing.sql")
