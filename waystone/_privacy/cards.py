"""Finding card numbers, by their digits and Luhn checksum, wherever they stand: alone,
joined to a word by ``_`` or ``-``, or glued to its letters (then only with a card's shape,
see :func:`card_shaped`). Digits in a digest, a uuid or a token of hex words are an
identifier's, a number starting with a date is a timestamp, and both are left alone.

Digits written in groups may hold a card number written as one between other groups
(``12 4111 1111 1111 1111``, ``4111 1111 1111 1111 12``): when the whole fails its
checksum, a card's usual grouping inside it is tried (four groups of four, or 4-6-5 and
4-6-4), and the search goes on from its next group of four (or of a card's length). Each
candidate looks at most a bounded distance around it, so a scan stays linear. Pure
functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch)
        if i % 2 == 1:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


# a date: 2026-11-30, 30.11.2026, 2026_11_30
DATE = re.compile(r"(?<!\d)(?:\d{4}([-_./])\d{1,2}\1\d{1,2}|\d{1,2}([-_./])\d{1,2}\2\d{4})(?!\d)")
# a date written as one number, at the start of a longer one: 20260102_181928, 20260102181928
_COMPACT_DATE = re.compile(r"(?:19|20)\d\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])")


def card_ok(match: str) -> bool:
    digits = re.sub(r"\D", "", match)
    # "report_2026_11_30_140100": a date and a time, whatever their checksum
    return (
        13 <= len(digits) <= 19
        and luhn_ok(digits)
        and DATE.search(match) is None
        and _COMPACT_DATE.match(match) is None
    )


_GROUPS = re.compile(r"\d+")
NETWORKS = "23456"  # the first digit of Mastercard, Amex, Visa, Discover, UnionPay...
_LENGTHS = frozenset({13, 14, 15, 16, 19})  # 17 and 18 are issued too, but rarely
# how cards are printed: 4-4-4-4, Amex 4-6-5, Diners 4-6-4, 19 digits 4-4-4-4-3, 13 4-4-4-1
_GROUPINGS = frozenset({(4, 4, 4, 4), (4, 6, 5), (4, 6, 4), (4, 4, 4, 4, 3), (4, 4, 4, 1)})
_USUAL_GROUPS = ((4, 4, 4, 4), (4, 6, 5), (4, 6, 4))  # looked for among other groups


def card_shaped(match: str) -> bool:
    """Whether digits joined to a word, or in groups joined by ``_`` or ``-``, have a
    card's shape: a network's first digit, a card's length and, in groups, a card's
    grouping. Ids made of numbers (``tx_7248198128_320529``, ``evt_<ms epoch>``) have a
    checksum one time in ten, so a checksum alone does not tell a card there."""
    groups = tuple(len(g) for g in _GROUPS.findall(match))
    return (
        match[0] in NETWORKS
        and sum(groups) in _LENGTHS
        and (len(groups) == 1 or groups in _GROUPINGS)
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
CARD = re.compile(r"(?<![\d+])(?<!\d\.)\d(?:[ _-]?\d){12,18}(?!\d|\.\d)")
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


def spans(
    text: str, regex: re.Pattern[str], check: Callable[[str], bool]
) -> Iterator[tuple[int, int]]:
    """Where ``text`` holds card numbers, left to right: ``regex`` finds runs of digits,
    ``check`` tells a card's digits (:func:`card_ok`)."""
    pos = 0
    while (m := regex.search(text, pos)) is not None:
        found = _card(text, m, check)
        if found is not None:
            yield found
            pos = found[1]
        else:
            pos = _next_card_group(m)


def _card(text: str, m: re.Match[str], check: Callable[[str], bool]) -> tuple[int, int] | None:
    if _is_card(text, m.start(), m.end(), check):
        return m.span()
    groups = list(_GROUPS.finditer(m.group()))
    lengths = tuple(len(g.group()) for g in groups[:4])
    for usual in _USUAL_GROUPS:
        if lengths[: len(usual)] == usual and len(groups) > len(usual):
            end = m.start() + groups[len(usual) - 1].end()
            if _is_card(text, m.start(), end, check):
                return m.start(), end
    return None


def _is_card(text: str, start: int, end: int, check: Callable[[str], bool]) -> bool:
    match = text[start:end]
    if not check(match) or _in_hex_id(text, start, end):
        return False
    return not _joined(text, start, end) or card_shaped(match)


def _next_card_group(m: re.Match[str]) -> int:
    """Where the search for a card number goes on after ``m`` failed: at its first later
    group of four digits (a card's first group) or of a card's length, else after it."""
    for group in list(_GROUPS.finditer(m.group()))[1:]:
        if len(group.group()) == 4 or len(group.group()) >= 13:
            return m.start() + group.start()
    return m.end()
