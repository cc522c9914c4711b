"""Named queries: a shared part is included where a query names it, a bad include is
an error that names it, and an identifier is composed quoted."""

from __future__ import annotations

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
