"""The identifiers a caller chooses, checked where they come in: thread ids, start keys,
signal names and keys, who acted (``by``) and agent names.

An identifier is stored as it is given, in indexed columns and in every record of its run,
and shown in URLs, logs and tables. So it is short (``LIMITS``, in characters: an index
row holds a few kilobytes, and a signal's is its thread id, name and key together) and
printable text: no control characters, line breaks, invisible format characters or lone
surrogates (which no encoding can store), and no space at either end. Anything else is
:class:`~waystone.errors.BadInput`, refused before anything is written.
"""

from __future__ import annotations

import unicodedata
from typing import Final, Literal

from waystone.errors import BadInput

Kind = Literal["thread id", "start key", "signal name", "signal key", "by", "agent name"]

LIMITS: Final[dict[Kind, int]] = {
    "thread id": 200,
    "start key": 200,
    "signal name": 200,
    "signal key": 200,
    "by": 200,
    # a default thread id is the agent's name and 13 characters more
    "agent name": 64,
}


def check_identifier(kind: Kind, value: str) -> str:
    """``value`` if it is a valid identifier of this kind; :class:`BadInput` saying what is
    wrong and what to do otherwise."""
    limit = LIMITS[kind]
    shown = "'by' (who acted)" if kind == "by" else f"the {kind}"
    if not isinstance(value, str) or not value:
        raise BadInput(f"{shown} must be a non-empty string")
    if len(value) > limit:
        raise BadInput(
            f"{shown} is {len(value)} characters long; it may have at most {limit} "
            "(choose a shorter one)"
        )
    for position, char in enumerate(value):
        if not char.isprintable():
            raise BadInput(
                f"{shown} holds {_describe(char)} at position {position}; it must be "
                "printable text (letters, digits, punctuation, spaces)"
            )
    if value != value.strip():
        raise BadInput(f"{shown} starts or ends with a space; remove it")
    return value


def _describe(char: str) -> str:
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        what = "a lone surrogate (not valid text in any encoding)"
    else:
        what = unicodedata.name(char, "a control character").lower()
    return f"U+{code:04X} ({what})"
