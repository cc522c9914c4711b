"""The SQL files: ``schema.sql`` (the truth), ``queries.sql`` (named queries), migrations."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

from psycopg import sql as pgsql

_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)
_INCLUDE = re.compile(r"^--\s*include:\s*(\w+)\s*$", re.MULTILINE)


def read(name: str) -> str:
    """The text of a file in this package, e.g. ``read("schema.sql")``."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


@cache
def queries() -> dict[str, str]:
    """Every named query in ``queries.sql``, by name."""
    text = read("queries.sql")
    parts = _NAME.split(text)
    found: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in found:
            raise ValueError(f"query {name!r} is defined twice in queries.sql")
        found[name] = body.strip()
    return expand(found)


def expand(found: dict[str, str]) -> dict[str, str]:
    """Each query with its ``-- include: NAME`` lines replaced by query NAME's text (a part
    two queries share). An included part includes nothing itself."""

    def part(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in found:
            raise ValueError(f"queries.sql includes {name!r}, which it does not define")
        if _INCLUDE.search(found[name]):
            raise ValueError(f"queries.sql includes {name!r}, which includes another part")
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
    return pgsql.SQL(query(name)).format(
        **{field: pgsql.Identifier(value) for field, value in identifiers.items()}
    )
