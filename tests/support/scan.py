"""A scan of what a database stores in plain form: every text, JSON and BYTEA column of
every table outside Postgres' own catalogs, Waystone's, LangGraph's and any other."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql as pgsql

TEXTUAL = ("text", "character varying", "character", "name", "json", "jsonb", "ARRAY")


def scan(conn: psycopg.Connection[Any], needles: list[str]) -> list[tuple[str, str, str]]:
    """(table, column, needle) for every plain occurrence of a needle."""
    columns = conn.execute(
        "SELECT c.table_schema, c.table_name, c.column_name, c.data_type "
        "FROM information_schema.columns c JOIN information_schema.tables t "
        "USING (table_catalog, table_schema, table_name) "
        "WHERE t.table_type = 'BASE TABLE' "
        "AND c.table_schema NOT IN ('pg_catalog', 'information_schema') "
        "AND c.data_type = ANY(%s)",
        (["bytea", *TEXTUAL],),
    ).fetchall()
    assert len({(c[0], c[1]) for c in columns}) >= 9, columns  # every table was looked at
    hits = []
    for schema, table, column, kind in columns:
        for needle in needles:
            ident = pgsql.SQL("{}.{}").format(pgsql.Identifier(schema), pgsql.Identifier(table))
            col = pgsql.Identifier(column)
            if kind == "bytea":
                cond = pgsql.SQL("position(convert_to(%s, 'UTF8') in {}) > 0").format(col)
            else:
                cond = pgsql.SQL("{}::text LIKE '%%' || %s || '%%'").format(col)
            query = pgsql.SQL("SELECT count(*) FROM {} WHERE {}").format(ident, cond)
            row = conn.execute(query, (needle,)).fetchone()
            if row and row[0]:
                hits.append((f"{schema}.{table}", column, needle))
    return hits


def row_counts(conn: psycopg.Connection[Any]) -> dict[str, int]:
    """The number of rows of every table, Waystone's and LangGraph's."""
    tables = conn.execute(
        "SELECT format('%I.%I', table_schema, table_name) FROM information_schema.tables "
        "WHERE table_type = 'BASE TABLE' "
        "AND table_schema NOT IN ('pg_catalog', 'information_schema')"
    ).fetchall()
    counts = {}
    for (table,) in tables:
        row = conn.execute(pgsql.SQL("SELECT count(*) FROM {}").format(pgsql.SQL(table)))
        counts[table] = row.fetchone()[0]  # type: ignore[index]
    return counts


def assert_sealed(conn: psycopg.Connection[Any], kinds: str, needles: list[str]) -> None:
    """Every type the query ``kinds`` finds is sealed, and no column holds a needle in
    plain form."""
    found = conn.execute(kinds).fetchall()
    assert found and all(k[0].startswith("sealed+") for k in found), found
    assert scan(conn, needles) == []
