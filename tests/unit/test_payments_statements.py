"""The example provider's statements, run on its schema in SQLite: every one compiles, a
list under any filters returns exactly the rows that match them, in order, and a filtered
list searches an index rather than scanning its table."""

from __future__ import annotations

import itertools
import re
import sqlite3
from collections.abc import Iterator

import pytest

from waystone import sql
from waystone.examples import payments

STATEMENTS = sql.named("waystone.examples", "payments.sql")
_NAMED_PARAM = re.compile(r":(\w+)")
# Parts included in others, and the statements that open or close a transaction.
NOT_ALONE = {"refund_columns", "notification_columns", "begin_write", "commit", "rollback"}


@pytest.fixture
def conn() -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.row_factory = sqlite3.Row
    db.executescript(STATEMENTS["schema"])
    for n, (key, order) in enumerate([("k1", "o1"), ("k2", "o2"), ("k3", "o1")]):
        refund = {"id": f"re{n}", "status": "succeeded", "order_id": order, "amount": "1.00"}
        refund |= {"currency": "EUR", "idempotency_key": key, "created_at": f"t{n}"}
        db.execute(STATEMENTS["add_refund"], refund)
    for n, ref in enumerate(["r1", "r2", "r1"]):
        note = {"id": f"no{n}", "to": "a@b", "body": "hi", "client_ref": ref, "status": "sent"}
        db.execute(STATEMENTS["add_notification"], note | {"created_at": f"t{n}"})
    yield db
    db.close()


def _unbound(statement: str) -> tuple[object, ...] | dict[str, object]:
    names = _NAMED_PARAM.findall(statement)
    return dict.fromkeys(names) if names else (None,) * statement.count("?")


@pytest.mark.parametrize("name", sorted(set(STATEMENTS) - NOT_ALONE - {"schema"}))
def test_every_statement_compiles_on_the_schema(conn: sqlite3.Connection, name: str) -> None:
    conn.execute(f"EXPLAIN {STATEMENTS[name]}", _unbound(STATEMENTS[name])).fetchall()


def _filters(values: dict[str, tuple[str, ...]]) -> Iterator[dict[str, str]]:
    """Every combination of some of the filters, each with each of its values."""
    names = list(values)
    for size in range(len(names) + 1):
        for chosen in itertools.combinations(names, size):
            for picked in itertools.product(*(values[name] for name in chosen)):
                yield dict(zip(chosen, picked, strict=True))


REFUNDS = {"idempotency_key": ("k1", "k2", "k9"), "order_id": ("o1", "o2", "o9")}
NOTIFICATIONS = {"client_ref": ("r1", "r2", "r9")}


@pytest.mark.parametrize(
    ("table", "allowed", "values"),
    [
        ("refunds", payments.REFUND_FILTERS, REFUNDS),
        ("notifications", payments.NOTIFICATION_FILTERS, NOTIFICATIONS),
    ],
)
def test_a_list_returns_the_rows_that_match_every_filter(
    conn: sqlite3.Connection,
    table: str,
    allowed: tuple[str, ...],
    values: dict[str, tuple[str, ...]],
) -> None:
    every = [dict(row) for row in conn.execute(STATEMENTS[table])]
    assert [row["id"] for row in every] == sorted(row["id"] for row in every)  # in seq order
    for filters in _filters(values):
        name, params = payments.list_statement(table, allowed, filters)
        listed = [dict(row) for row in conn.execute(STATEMENTS[name], params)]
        expected = [row for row in every if all(row[k] == v for k, v in filters.items())]
        assert listed == expected, filters


@pytest.mark.parametrize(
    ("table", "allowed", "filters"),
    [
        ("refunds", payments.REFUND_FILTERS, {"idempotency_key": "k1"}),
        ("refunds", payments.REFUND_FILTERS, {"order_id": "o1"}),
        ("refunds", payments.REFUND_FILTERS, {"order_id": "o1", "idempotency_key": "k1"}),
        ("notifications", payments.NOTIFICATION_FILTERS, {"client_ref": "r1"}),
    ],
)
def test_a_filtered_list_searches_an_index(
    conn: sqlite3.Connection, table: str, allowed: tuple[str, ...], filters: dict[str, str]
) -> None:
    name, params = payments.list_statement(table, allowed, filters)
    plan = [row["detail"] for row in conn.execute(f"EXPLAIN QUERY PLAN {STATEMENTS[name]}", params)]
    assert any(step.startswith("SEARCH") and "INDEX" in step for step in plan), plan
    assert not any(step.startswith("SCAN") for step in plan), plan
