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

from waystone._privacy import emails

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


# a date: 2026-11-30, 30.11.2026, 2026_11_30
_DATE = re.compile(r"(?<!\d)(?:\d{4}([-_./])\d{1,2}\1\d{1,2}|\d{1,2}([-_./])\d{1,2}\2\d{4})(?!\d)")
# a date written as one number, at the start of a longer one: 20260102_181928, 20260102181928
_COMPACT_DATE = re.compile(r"(?:19|20)\d\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])")


def _card_ok(match: str) -> bool:
    digits = re.sub(r"\D", "", match)
    # "report_2026_11_30_140100": a date and a time, whatever their checksum
    return (
        13 <= len(digits) <= 19
        and luhn_ok(digits)
        and _DATE.search(match) is None
        and _COMPACT_DATE.match(match) is None
    )


_GROUPS = re.compile(r"\d+")
_CARD_NETWORKS = "23456"  # the first digit of Mastercard, Amex, Visa, Discover, UnionPay...
_CARD_LENGTHS = frozenset({13, 14, 15, 16, 19})  # 17 and 18 are issued too, but rarely
# how cards are printed: 4-4-4-4, Amex 4-6-5, Diners 4-6-4, 19 digits 4-4-4-4-3, 13 4-4-4-1
_CARD_GROUPINGS = frozenset({(4, 4, 4, 4), (4, 6, 5), (4, 6, 4), (4, 4, 4, 4, 3), (4, 4, 4, 1)})


def card_shaped(match: str) -> bool:
    """Whether digits joined to a word, or in groups joined by ``_`` or ``-``, have a
    card's shape: a network's first digit, a card's length and, in groups, a card's
    grouping. Ids made of numbers (``tx_7248198128_320529``, ``evt_<ms epoch>``) have a
    checksum one time in ten, so a checksum alone does not tell a card there."""
    groups = tuple(len(g) for g in _GROUPS.findall(match))
    return (
        match[0] in _CARD_NETWORKS
        and sum(groups) in _CARD_LENGTHS
        and (len(groups) == 1 or groups in _CARD_GROUPINGS)
    )


def _joined(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is joined to a word, or its groups by ``_`` or ``-``."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    return (
        any(ch in "_-" for ch in text[start:end])
        or before.isalnum()
        or before in "_-"
        or after.isalnum()
        or after in "_-"
    )


# 13 to 19 digits, spaces, dashes or underscores between them, after no digit: a "+"
# before them starts a phone number's country code, and "1." a fraction's digits (a comma
# is not a decimal point here: "7,2,4111111111111111" is a CSV row)
_CARD = re.compile(r"(?<![\d+])(?<!\d\.)\d(?:[ _-]?\d){12,18}(?!\d|\.\d)")
_HEX = frozenset("0123456789abcdefABCDEF")
_WORD = 64  # how far a word or token around a number is looked at, either side
_UUID = re.compile(r"[0-9a-fA-F]{8}(?:[-_][0-9a-fA-F]{4}){3}[-_][0-9a-fA-F]{12}")
_MIXED = re.compile(r"\d[a-fA-F]|[a-fA-F]\d")


def _hex_word_at(text: str, i: int) -> bool:
    """Whether the word around ``text[i]`` is of hex digits, with letters: a digest's."""
    lo, hi = i, i + 1
    while lo > max(i - _WORD, 0) and text[lo - 1].isalnum():
        lo -= 1
    while hi < min(i + _WORD, len(text)) and text[hi].isalnum():
        hi += 1
    word = text[lo:hi]
    return all(ch in _HEX for ch in word) and not word.isdigit()


def _in_hex_id(text: str, start: int, end: int) -> bool:
    """Whether the digits ``text[start:end]`` are part of an identifier, whatever they
    hold: glued at either end to letters that make with them a word of hex digits (a
    digest), or inside a uuid or a token of hex words joined by ``-`` or ``_``."""
    if _hex_word_at(text, start) or _hex_word_at(text, end - 1):
        return True
    lo, hi = start, end
    while lo > max(start - _WORD, 0) and (text[lo - 1].isalnum() or text[lo - 1] in "-_"):
        lo -= 1
    while hi < min(end + _WORD, len(text)) and (text[hi].isalnum() or text[hi] in "-_"):
        hi += 1
    if any(u.start() < end and start < u.end() for u in _UUID.finditer(text, lo, hi)):
        return True
    token = text[lo:hi]
    return all(ch in _HEX or ch in "-_" for ch in token) and _MIXED.search(token) is not None


# Not phone numbers: a date inside the match, a decimal amount, a plain 8-digit number.
_DECIMAL = re.compile(r"\d+\.\d+|\d{1,3}(?: \d{3})+\.\d{1,2}")
_GROUPED_8 = re.compile(r"\d{2,4}(?:[ -]\d{2,4}){1,3}")


def _phone_ok(match: str) -> bool:
    digits = sum(ch.isdigit() for ch in match)
    if _DATE.search(match) or _DECIMAL.fullmatch(match):
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
    """Card numbers, by their digits and Luhn checksum, wherever they stand: alone, joined
    to a word by ``_`` or ``-``, or glued to its letters (then with a card's shape, see
    :func:`card_shaped`). Digits in a digest, a uuid or a token of hex words are an
    identifier's, and left alone.

    Digits written in groups may hold a card number written as one between other groups
    (``12 4111 1111 1111 1111``, ``4111 1111 1111 1111 12``): when the whole fails its
    checksum, a card's usual grouping inside it is tried (four groups of four, or 4-6-5
    and 4-6-4), and the search goes on from its next group of four (or of a card's length)."""

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        pos = 0
        while (m := self.regex.search(text, pos)) is not None:
            found = self._card(text, m)
            if found is not None:
                yield found
                pos = found[1]
            else:
                pos = _next_card_group(m)

    def _card(self, text: str, m: re.Match[str]) -> tuple[int, int] | None:
        if self._is_card(text, m.start(), m.end()):
            return m.span()
        groups = list(_GROUPS.finditer(m.group()))
        lengths = tuple(len(g.group()) for g in groups[:4])
        for usual in _USUAL_GROUPS:
            if lengths[: len(usual)] == usual and len(groups) > len(usual):
                end = m.start() + groups[len(usual) - 1].end()
                if self._is_card(text, m.start(), end):
                    return m.start(), end
        return None

    def _is_card(self, text: str, start: int, end: int) -> bool:
        match = text[start:end]
        if not self.check(match) or _in_hex_id(text, start, end):
            return False
        return not _joined(text, start, end) or card_shaped(match)


_USUAL_GROUPS = ((4, 4, 4, 4), (4, 6, 5), (4, 6, 4))


def _next_card_group(m: re.Match[str]) -> int:
    """Where the search for a card number goes on after ``m`` failed: at its first later
    group of four digits (a card's first group) or of a card's length, else after it."""
    for group in list(_GROUPS.finditer(m.group()))[1:]:
        if len(group.group()) == 4 or len(group.group()) >= 13:
            return m.start() + group.start()
    return m.end()


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
    _Card("card", _CARD, _card_ok),
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
        card_like = digits[0] in _CARD_NETWORKS or _CARD_KEY.search(words)
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
