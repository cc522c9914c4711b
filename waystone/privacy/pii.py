"""Finding personal data in text: emails, phone numbers, card numbers (Luhn-checked),
IBANs (mod-97-checked), and any pattern you add. Pure functions, no I/O.

Matches never start or end inside a word or an identifier (an idempotency key, a uuid),
so hex digests and ids are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

_EDGE_L = r"(?<![\w\-./@])"
_EDGE_R = r"(?![\w\-/@]|\.\w)"


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch)
        if i % 2 == 1:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def iban_ok(text: str) -> bool:
    compact = text.replace(" ", "").upper()
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    number = "".join(str(int(ch, 36)) for ch in moved)
    return int(number) % 97 == 1


def _card_ok(match: str) -> bool:
    digits = re.sub(r"\D", "", match)
    return 13 <= len(digits) <= 19 and luhn_ok(digits)


def _phone_ok(match: str) -> bool:
    digits = re.sub(r"\D", "", match)
    return 9 <= len(digits) <= 15


@dataclass(frozen=True)
class Pattern:
    """A kind of personal data: a regex and an optional validity check of a match."""

    kind: str
    regex: re.Pattern[str]
    check: Callable[[str], bool] = field(default=lambda _m: True)


DEFAULT_PATTERNS: tuple[Pattern, ...] = (
    Pattern(
        "email", re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
    ),
    Pattern("iban", re.compile(_EDGE_L + r"[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}" + _EDGE_R), iban_ok),
    Pattern("card", re.compile(_EDGE_L + r"\d(?:[ -]?\d){12,18}" + _EDGE_R), _card_ok),
    Pattern("phone", re.compile(_EDGE_L + r"\+?\(?\d[\d ().-]{7,}\d" + _EDGE_R), _phone_ok),
)


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int
    value: str


@dataclass(frozen=True)
class Detector:
    """Finds personal data. Earlier patterns win where matches overlap."""

    patterns: tuple[Pattern, ...] = DEFAULT_PATTERNS

    def with_patterns(self, extra: Iterable[Pattern]) -> Detector:
        """A detector that also finds ``extra``; your patterns win over the built-in ones."""
        return Detector(tuple(extra) + self.patterns)

    def find(self, text: str) -> Iterator[Finding]:
        taken: list[tuple[int, int]] = []
        found: list[Finding] = []
        for pattern in self.patterns:
            for m in pattern.regex.finditer(text):
                span = m.span()
                if any(span[0] < e and s < span[1] for s, e in taken):
                    continue
                if pattern.check(m.group()):
                    taken.append(span)
                    found.append(Finding(pattern.kind, span[0], span[1], m.group()))
        yield from sorted(found, key=lambda f: f.start)

    def replace(self, text: str, token: Callable[[str, str], str]) -> str:
        """``text`` with every finding replaced by ``token(kind, value)``."""
        out, last = [], 0
        for f in self.find(text):
            out.append(text[last : f.start])
            out.append(token(f.kind, f.value))
            last = f.end
        out.append(text[last:])
        return "".join(out)
