"""The SQL files: ``schema.sql`` (the truth), ``queries.sql`` (named queries), migrations."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

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
    # `-- include: NAME` stands for that query's text (a part two queries share)
    return {name: _INCLUDE.sub(lambda m: found[m.group(1)], body) for name, body in found.items()}


def query(name: str) -> str:
    try:
        return queries()[name]
    except KeyError:
        raise KeyError(f"no query named {name!r} in queries.sql") from None
