"""Every SQL statement Waystone runs is in ``waystone/sql/``, run by name, and none of them
reads or returns ``*``: a migration may add a column to any table while a process of the
previous version keeps working."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from waystone import sql

PACKAGE = Path(sql.__file__).resolve().parent.parent
LOADER = PACKAGE / "sql" / "__init__.py"
# The demo's payments provider stands for a third party: its SQLite store is its own, not
# Waystone's database.
OUTSIDE = PACKAGE / "examples"

# Case-sensitive: the project writes SQL keywords in capitals, its prose does not.
_VERBS = (
    "SELECT|INSERT|UPDATE|DELETE|WITH|CREATE|ALTER|DROP|TRUNCATE|LISTEN|UNLISTEN|NOTIFY|SET|"
    "SHOW|RESET|DISCARD|BEGIN|COMMIT|ROLLBACK|SAVEPOINT|LOCK|VACUUM|ANALYZE|EXPLAIN|COPY|"
    "PREPARE|EXECUTE|DEALLOCATE|GRANT|REVOKE|CALL|MERGE|DO|VALUES|TABLE"
)
_STATEMENT = re.compile(
    rf"""
    ^\s*\(?\s*(?:{_VERBS})\s+[\w"'(*{{%]         # starts as a statement
    | \bSELECT\b[\s\S]*?\bFROM\b                  # or holds one's telling parts
    | \bINSERT\s+INTO\b | \bDELETE\s+FROM\b | \bUPDATE\s+[\w."]+\s+(?:AS\s+)?(?:\w+\s+)?SET\b
    | \bRETURNING\b | \bON\s+CONFLICT\b | \bFOR\s+(?:NO\s+KEY\s+)?UPDATE\b
    | \bWHERE\s+[\w.]+\s*(?:=|<>|<|>|\bIN\b|\bIS\b|\bLIKE\b|\bANY\b)
    | \b(?:set_config|pg_notify|pg_\w*advisory\w*)\s*\(
    """,
    re.VERBOSE,
)


def holds_sql(text: str) -> bool:
    """Whether a string literal looks like a SQL statement or a piece of one."""
    return _STATEMENT.search(text) is not None


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append((node.lineno, node.value))
        elif isinstance(node, ast.JoinedStr):  # an f-string: its text, holes as {}
            parts = [v.value if isinstance(v, ast.Constant) else "{}" for v in node.values]
            found.append((node.lineno, "".join(str(p) for p in parts)))
    return found


def sql_outside_the_loader() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == LOADER or OUTSIDE in path.parents:
            continue
        for line, text in _strings(ast.parse(path.read_text(encoding="utf-8"))):
            if holds_sql(text):
                where = path.relative_to(PACKAGE.parent)
                found.append(f"{where}:{line}: {text.strip().splitlines()[0][:60]!r}")
    return found


def test_no_module_but_the_loader_holds_sql() -> None:
    found = sql_outside_the_loader()
    assert not found, (
        "SQL in Python modules: move each statement to waystone/sql/queries.sql under a "
        "name and run it by that name (sql.query, or sql.composed for identifiers):\n"
        + "\n".join(found)
    )


@pytest.mark.parametrize(
    "text",
    [
        "SELECT 1",
        "\nSELECT state, count(*) AS n\nFROM waystone.runs\nGROUP BY state\n",
        "SELECT set_config('waystone.lease_token', %s, true)",
        "select pg_notify('waystone_webhook', %s)",
        "INSERT INTO waystone.vault (token) VALUES (%s)",
        "UPDATE waystone.webhooks w SET status = 'due'",
        "DELETE FROM waystone.webhooks WHERE id = %s",
        "LISTEN {}",
        "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY",
        "WHERE thread_id = %s AND checkpoint_ns = %s",
        "CREATE TABLE IF NOT EXISTS x (v integer)",
        "WITH moved AS (UPDATE waystone.runs SET state = 'done' RETURNING thread_id)",
    ],
)
def test_a_statement_or_a_piece_of_one_is_found(text: str) -> None:
    assert holds_sql(text)


@pytest.mark.parametrize(
    "text",
    [
        "DELETE",
        "DO",
        "rollback",
        "Commit the intent (or count one more attempt) before calling the provider.",
        "Show a run's state, next step and pending approval or interrupts.",
        "Idle workers hold no run and wait on LISTEN/NOTIFY (``waystone_runnable``)",
        "select the runs to show, from the newest",
        "update the settings, then set them",
        "where the run stopped",
    ],
)
def test_prose_is_not_sql(text: str) -> None:
    assert not holds_sql(text)


# -- the named statements ------------------------------------------------------------------

_COMMENT = re.compile(r"--[^\n]*")
_LITERAL = re.compile(r"'(?:[^']|'')*'")
_STAR = re.compile(
    r"""
    \b\w+\s*\.\s*\*                                 # r.*, and anything qualified
    | (?:\bSELECT|\bRETURNING|,)\s*(?:ALL\s+|DISTINCT\s+)?\*  # a select list's * (not count(*))
    """,
    re.VERBOSE | re.IGNORECASE,
)


def reads_star(statement: str) -> bool:
    """Whether a statement selects or returns ``*`` (``count(*)`` and products aside)."""
    code = _LITERAL.sub("''", _COMMENT.sub("", statement))
    return _STAR.search(code) is not None


def named_statements() -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted((PACKAGE / "sql").glob("*.sql")):
        text = path.read_text(encoding="utf-8")
        parts = sql._NAME.split(text)
        for name, body in zip(parts[1::2], parts[2::2], strict=True):
            found[f"{path.name}:{name}"] = body
    return found


def test_there_are_named_statements_to_check() -> None:
    assert len(named_statements()) >= len(sql.queries()) > 100


def test_no_named_statement_reads_or_returns_star() -> None:
    starred = sorted(name for name, body in named_statements().items() if reads_star(body))
    assert not starred, (
        "these statements read or return *: name the columns (the records' fields), so a "
        f"new column changes nothing for the previous version: {starred}"
    )


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM waystone.runs",
        "SELECT r.*, 1 AS n FROM waystone.runs r",
        "UPDATE waystone.runs SET state = 'done' RETURNING *",
        "INSERT INTO t (a) VALUES (1) RETURNING *, 1 AS run_number",
        "SELECT a, * FROM t",
        "select c . * from t c",
        "UNION ALL SELECT * FROM due",
    ],
)
def test_a_star_is_found(statement: str) -> None:
    assert reads_star(statement)


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT count(*)::bigint AS n FROM waystone.runs",
        "SELECT count( * ) FROM t",
        "SELECT extract(epoch FROM a - b)::float8 * 1000.0 AS ms FROM t",
        "SELECT a FROM t -- not SELECT * here",
        "SELECT 'SELECT *' AS text FROM t",
        "SELECT 2 * 3, x*y FROM t",
    ],
)
def test_no_star_is_found_where_none_is_read(statement: str) -> None:
    assert not reads_star(statement)
