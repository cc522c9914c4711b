"""The SQL files: ``schema.sql`` (the truth), ``queries.sql`` (named queries), migrations;
and the reader of any package's file of named statements."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from psycopg import sql as pgsql

_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)
_INCLUDE = re.compile(r"^--\s*include:\s*(\w+)\s*$", re.MULTILINE)
QUERIES = "queries.sql"


def read(name: str, package: str = __name__) -> str:
    """The text of a file in a package (this one by default), e.g. ``read("schema.sql")``."""
    return resources.files(package).joinpath(name).read_text(encoding="utf-8")


@cache
def named(package: str, file: str) -> dict[str, str]:
    """Every statement of ``file`` in ``package``, by the ``-- name: NAME`` line it
    follows, with its includes expanded."""
    parts = _NAME.split(read(file, package))
    found: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in found:
            raise ValueError(f"query {name!r} is defined twice in {file}")
        found[name] = body.strip()
    return expand(found, file)


@cache
def queries() -> dict[str, str]:
    """Every named query in ``queries.sql``, by name."""
    return named(__name__, QUERIES)


def expand(found: dict[str, str], file: str = QUERIES) -> dict[str, str]:
    """Each query with its ``-- include: NAME`` lines replaced by query NAME's text (a part
    two queries share). An included part includes nothing itself."""

    def part(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in found:
            raise ValueError(f"{file} includes {name!r}, which it does not define")
        if _INCLUDE.search(found[name]):
            raise ValueError(f"{file} includes {name!r}, which includes another part")
        return found[name]

    return {name: _INCLUDE.sub(part, body) for name, body in found.items()}


def query(name: str) -> str:
    try:
        return queries()[name]
    except KeyError:
        raise KeyError(f"no query named {name!r} in queries.sql") from None


def composed(name: str, **identifiers: str) -> pgsql.Composed:
    """Query ``name`` with each ``{field}`` in it replaced by an identifier quoted as one
    (a ``LISTEN`` channel, a schema): never text pasted into SQL."""
    # psycopg on first use: the example provider reads its SQLite statements through this
    # module and loads nothing of Postgres.
    from psycopg import sql as pgsql

    return pgsql.SQL(query(name)).format(
        **{field: pgsql.Identifier(value) for field, value in identifiers.items()}
    )
