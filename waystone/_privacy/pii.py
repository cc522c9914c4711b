"""Finding personal data: emails, phone numbers, card numbers (Luhn-checked), IBANs
(mod-97-checked), and any pattern you add, in text and in JSON numbers. Pure functions,
no I/O.

What is found: emails with internationalised or punycode domains, spaced (``ana @
example.com``, ``ana @example.com``, ``ana . lopez @ example . com``) or bracketed (``ana
[at] example [dot] com``); phone numbers of 9 to 15 digits, and of 8 digits when written in
groups (``2345 6789``); card numbers by their digits and Luhn checksum wherever they stand,
joined to a word or not (``ref_4111111111111111``, ``id-4111…``, ``card4111…``,
``4111…_x``); IBANs in any case, also joined to a word by ``_`` or ``-`` (a lower-case one
needs its country's exact length); card numbers given as JSON numbers, and phone numbers
given as JSON numbers under a key that names a phone.

What is left alone: a phone number never starts or ends inside an identifier (a uuid, a
checkpoint id: it has no checksum to tell it from an id's digits), a word of hex digits, a
uuid and a token of hex words joined by ``-`` or ``_`` are never looked into (a digest
holds runs of digits), digits joined to a word or by ``_`` or ``-`` are a card number only
with a card's shape (``tx_7248198128_320529``, ``evt_<ms epoch>`` are ids), a number
starting with a date is a timestamp (``backup_20260102_181928``), the digits after a
decimal point are a fraction (a comma separates values: ``7,2,4111…`` is a CSV row), an
email spaced on one side of its ``@`` or around its dots needs a known top-level domain
(``ping @ana.lopez`` is a mention), and dates, times and decimal amounts are not phone
numbers.

A scan takes time linear in the text's length: every built-in pattern starts at a word's
edge, at a digit that follows no digit, or at an ``@``, and its quantifiers are bounded,
so no start costs more than a constant. A pattern you add should keep that property.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from waystone._privacy import cards, emails
from waystone._privacy.cards import luhn_ok

_EDGE_L = r"(?<![\w\-./@])(?<!\d:)"  # after "14:18:" comes a time's seconds
_EDGE_R = r"(?![\w\-/@]|\.\w)"
# an IBAN may be joined to a word by "_" or "-" (its check digits keep ids out)
_JOINED_L = r"(?<![^\W_])(?<![./@])"
_JOINED_R = r"(?![^\W_]|[/@]|\.\w)"

# The lengths of IBANs by country (the SWIFT registry).
IBAN_LENGTHS: dict[str, int] = {
    **dict.fromkeys(["NO"], 15),
    **dict.fromkeys(["BE"], 16),
    **dict.fromkeys(["DK", "FI", "FK", "FO", "GL", "NL", "SD"], 18),
    **dict.fromkeys(["MK", "SI"], 19),
    **dict.fromkeys(["AT", "BA", "EE", "KZ", "LT", "LU", "MN", "XK"], 20),
    **dict.fromkeys(["CH", "HR", "LI", "LV"], 21),
    **dict.fromkeys(["BG", "BH", "CR", "DE", "GB", "GE", "IE", "ME", "RS", "VA"], 22),
    **dict.fromkeys(["AE", "GI", "IL", "IQ", "OM", "SO", "TL"], 23),
    **dict.fromkeys(["AD", "CZ", "ES", "MD", "PK", "RO", "SA", "SE", "SK", "TN", "VG"], 24),
    **dict.fromkeys(["LY", "PT", "ST"], 25),
    **dict.fromkeys(["IS", "TR"], 26),
    **dict.fromkeys(["BI", "DJ", "FR", "GR", "IT", "MC", "MR", "SM"], 27),
    **dict.fromkeys(["AL", "AZ", "BY", "CY", "DO", "GT", "HU", "LB", "NI", "PL", "SV"], 28),
    **dict.fromkeys(["BR", "EG", "PS", "QA", "UA"], 29),
    **dict.fromkeys(["JO", "KW", "MU", "YE"], 30),
    **dict.fromkeys(["MT", "SC"], 31),
    **dict.fromkeys(["LC"], 32),
    **dict.fromkeys(["RU"], 33),
}


def iban_ok(text: str) -> bool:
    compact = text.replace(" ", "").upper()
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    number = "".join(str(int(ch, 36)) for ch in moved)
    return int(number) % 97 == 1


# Not phone numbers: a date inside the match, a decimal amount, a plain 8-digit number.
_DECIMAL = re.compile(r"\d+\.\d+|\d{1,3}(?: \d{3})+\.\d{1,2}")
_GROUPED_8 = re.compile(r"\d{2,4}(?:[ -]\d{2,4}){1,3}")


def _phone_ok(match: str) -> bool:
    digits = sum(ch.isdigit() for ch in match)
    if cards.DATE.search(match) or _DECIMAL.fullmatch(match):
        return False
    if digits == 8:  # a local number, written as one: "2345 6789", "23 45 67 89"
        return _GROUPED_8.fullmatch(match) is not None
    return 9 <= digits <= 15


@dataclass(frozen=True)
class Pattern:
    """A kind of personal data: a regex and an optional validity check of a match.

    The finding is the whole match, or its group named ``pii`` when the regex has one
    (the rest of the match is context for the check)."""

    kind: str
    regex: re.Pattern[str]
    check: Callable[[str], bool] = field(default=lambda _m: True)

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        """Where ``text`` holds this kind, left to right, not overlapping."""
        group = "pii" if "pii" in self.regex.groupindex else 0
        for m in self.regex.finditer(text):
            if self.check(m.group()):
                yield m.span(group)


@dataclass(frozen=True)
class _Email(Pattern):
    """Emails (:mod:`waystone._privacy.emails`); ``regex`` finds their ``@``."""

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        return emails.spans(text, self.regex)


@dataclass(frozen=True)
class _Card(Pattern):
    """Card numbers (:mod:`waystone._privacy.cards`); ``regex`` finds runs of digits."""

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        return cards.spans(text, self.regex, self.check)


def _iban_by_country() -> re.Pattern[str]:
    by_length: dict[int, list[str]] = {}
    for country, length in IBAN_LENGTHS.items():
        by_length.setdefault(length, []).append(country)
    shapes = "|".join(
        rf"(?:{'|'.join(countries)})\d{{2}}(?: ?[A-Z0-9]){{{length - 4}}}"
        for length, countries in sorted(by_length.items())
    )
    # the lookahead turns most starts away before the alternatives are tried one by one
    return re.compile(_JOINED_L + rf"(?=[A-Z]{{2}}\d\d)(?:{shapes})" + _JOINED_R, re.IGNORECASE)


DEFAULT_PATTERNS: tuple[Pattern, ...] = (
    _Email("email", emails.AT),
    Pattern("iban", _iban_by_country(), iban_ok),
    # a country missing from the table, in capitals as IBANs are printed
    Pattern(
        "iban", re.compile(_JOINED_L + r"[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}" + _JOINED_R), iban_ok
    ),
    _Card("card", cards.CARD, cards.card_ok),
    Pattern("phone", re.compile(_EDGE_L + r"\+?\(?\d[\d ().-]{6,28}\d" + _EDGE_R), _phone_ok),
)


# Keys under which a JSON number is a phone number or a card number (camelCase split).
_PHONE_KEY = re.compile(r"phone|mobile|msisdn|whatsapp|(?<![a-z])(?:tel|cell|fax|sms)(?![a-z])")
_CARD_KEY = re.compile(r"card|credit|(?<![a-z])(?:pan|cc)(?![a-z])")


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
        taken: list[tuple[int, int, str]] = []  # disjoint, sorted by start
        for pattern in self.patterns:
            kept: list[tuple[int, int, str]] = []
            i = 0
            for start, end in pattern.spans(text):
                while i < len(taken) and taken[i][1] <= start:
                    i += 1
                if i < len(taken) and taken[i][0] < end:
                    continue  # overlaps an earlier pattern's finding
                kept.append((start, end, pattern.kind))
            if kept:
                taken = sorted(taken + kept)  # two sorted runs: merged in linear time
        for start, end, kind in taken:
            yield Finding(kind, start, end, text[start:end])

    def number_kind(self, number: int, key: str | None = None) -> str | None:
        """The kind of personal data a JSON number is, if any: a card number (Luhn-checked,
        13 to 19 digits, of a card network or under a key that names a card), or a phone
        number (8 to 15 digits) under a key that names a phone (``phone``, ``mobile``,
        ``tel``...). Other numbers (counts, amounts, timestamps, ids) are left alone."""
        if number < 10_000_000:
            return None
        digits = str(number)
        words = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", key).lower() if key else ""
        card_like = digits[0] in cards.NETWORKS or _CARD_KEY.search(words)
        if card_like and 13 <= len(digits) <= 19 and luhn_ok(digits):
            return "card"
        if len(digits) <= 15 and _PHONE_KEY.search(words):
            return "phone"
        return None

    def replace(self, text: str, token: Callable[[str, str], str]) -> str:
        """``text`` with every finding replaced by ``token(kind, value)``."""
        out, last = [], 0
        for f in self.find(text):
            out.append(text[last : f.start])
            out.append(token(f.kind, f.value))
            last = f.end
        out.append(text[last:])
        return "".join(out)
