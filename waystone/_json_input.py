"""JSON given by a caller (the CLI's ``--input``, ``--args`` and ``--payload``, the HTTP
API's bodies and webhooks), parsed within limits: whatever is accepted here can be
stored and walked without surprises.

A document is at most ``MAX_CHARS`` characters and ``MAX_DEPTH`` levels of arrays and
objects deep (an input, an approval or a webhook event is small and shallow; the code
that redacts and stores a value walks it recursively). Its strings and keys hold no NUL
(Postgres cannot store one) and no lone surrogate (no encoding can), and ``NaN`` and
``Infinity`` (not JSON) are refused. Anything else is :class:`~waystone.errors.BadInput`.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from waystone.errors import BadInput

MAX_CHARS: Final = 1 << 20
MAX_DEPTH: Final = 32
_UNSTORABLE: Final = re.compile("[\x00\ud800-\udfff]")


def parse_json_input(text: str | bytes, what: str) -> Any:
    """The value of ``text``; :class:`BadInput` naming ``what`` (e.g. ``--input``) and what
    is wrong with it."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadInput(f"{what} is not UTF-8: {exc}") from exc
    if len(text) > MAX_CHARS:
        raise BadInput(f"{what} is {len(text)} characters long; the limit is {MAX_CHARS}")
    try:
        value = json.loads(text, parse_constant=lambda name: _no_constant(name, what))
    except json.JSONDecodeError as exc:
        raise BadInput(f"{what} is not valid JSON: {exc.msg} at position {exc.pos}") from exc
    except RecursionError:
        raise BadInput(f"{what} is nested too deeply: at most {MAX_DEPTH} levels") from None
    except ValueError:  # an integer with more digits than Python converts
        raise BadInput(f"{what} holds a number with too many digits; send it as a string") from None
    _check(value, what)
    return value


def _no_constant(name: str, what: str) -> Any:
    raise BadInput(f"{what} holds {name}, which is not JSON; send a number or a string")


def _check(value: Any, what: str) -> None:
    """Depth and strings, walked without recursion (the depth is the caller's)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            _check_text(item, what)
        elif isinstance(item, dict | list):
            if depth >= MAX_DEPTH:
                raise BadInput(f"{what} is nested too deeply: at most {MAX_DEPTH} levels")
            if isinstance(item, dict):
                for key, inner in item.items():
                    _check_text(key, what)
                    stack.append((inner, depth + 1))
            else:
                stack.extend((inner, depth + 1) for inner in item)


def _check_text(text: str, what: str) -> None:
    found = _UNSTORABLE.search(text)
    if found is None:
        return
    if found.group() == "\x00":
        raise BadInput(f"{what} holds a NUL character (\\u0000), which cannot be stored")
    raise BadInput(
        f"{what} holds a lone surrogate (\\u{ord(found.group()):04x}), which is not text; "
        "send each character as itself or as a surrogate pair"
    )
