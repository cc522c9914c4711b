"""Who a request is: the API's tokens and the owners they stand for.

``WAYSTONE_API_TOKEN`` is the operator's token: it sees every thread. Owners' tokens come
from ``WAYSTONE_API_TOKENS_FILE`` (a file, one ``owner=token`` a line; ``#`` comments and
blank lines skipped) or ``WAYSTONE_API_TOKENS`` (``owner=token`` pairs, comma-separated):
a thread made with an owner's token is that owner's, and another owner's token finds
nothing of it. A file keeps the tokens out of the environment other tools may print;
neither is ever passed on a command line (``ps`` shows those). No token is ever logged or
echoed in an error.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from waystone._identifiers import check_identifier
from waystone.config import Settings
from waystone.errors import BadInput

OPERATOR = None  # the owner of the operator's token: none, so it sees every thread


@dataclass(frozen=True)
class Tokens:
    """The operator's token (or none) and each owner's token, by owner."""

    operator: str | None = None
    owners: Mapping[str, str] = field(default_factory=dict)

    @property
    def any(self) -> bool:
        return self.operator is not None or bool(self.owners)

    def caller(self, given: str) -> tuple[bool, str | None]:
        """Whether ``given`` is one of the tokens, and whose: ``None`` for the operator.
        Each token is compared in constant time, so the answer's timing tells nothing."""
        found, owner = False, OPERATOR
        if self.operator is not None and _same(given, self.operator):
            found = True
        for name, token in self.owners.items():
            if _same(given, token):
                found, owner = True, name
        return found, owner


def _same(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())


def from_settings(settings: Settings, operator: str | None) -> Tokens:
    """The operator's token and the owners' tokens the settings name (the file's, then
    the pairs'); :class:`BadInput` on a malformed pair (which line or pair, never the
    token)."""
    owners: dict[str, str] = {}
    path = str(settings.api_tokens_file or "")
    if path:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise BadInput(f"WAYSTONE_API_TOKENS_FILE {path!r} cannot be read: {exc}") from None
        lines = text.splitlines()
        _add(owners, [x for x in lines if x.strip() and not x.lstrip().startswith("#")], path)
    pairs = settings.api_tokens
    if pairs:
        _add(owners, [p for p in pairs.split(",") if p.strip()], "WAYSTONE_API_TOKENS")
    taken = list(owners.values()) + ([operator] if operator else [])
    if len(set(taken)) != len(taken):
        raise BadInput("the API tokens: each owner, and the operator, needs a token of its own")
    return Tokens(operator, owners)


def _add(owners: dict[str, str], pairs: list[str], source: str) -> None:
    for number, pair in enumerate(pairs, 1):
        owner, sep, token = (x.strip() for x in pair.partition("="))
        if not sep or not owner or not token:
            raise BadInput(
                f"{source}: entry {number} is not owner=token (an owner's name, '=', its token)"
            )
        check_identifier("by", owner)
        if owner in owners:
            raise BadInput(f"{source}: owner {owner!r} is named twice; give each one token")
        owners[owner] = token
