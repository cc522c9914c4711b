"""Finding emails, from their ``@`` (or ``[at]``) outwards: the local part before it (at
most 64 characters a part, matched in the reversed text), the domain after it. Anchoring
at the separator keeps a long run of letters without one from being scanned again from
each of its positions: every ``@`` costs at most a constant.

An ``@`` with spaces on both sides or none, and dots without spaces, make an email with
any top-level domain. An ``@`` with spaces on one side only (``ping @ana.lopez`` is a
mention) or dots with spaces before them (``example . com``, ``example .com``) make one
only when it ends with a known top-level domain; a dot with spaces only after it
(``example. com``) ends a sentence. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_MARKS = "\u0300-\u036f"  # combining accents: a decomposed "exämple" is still one word

_LOCAL = rf"[\w.%+\-{_MARKS}]"
_LABEL = rf"[\w{_MARKS}](?:[\w\-{_MARKS}]{{0,61}}[\w{_MARKS}])?"
_DOT = r"(?:\.|\s{0,2}[\[(](?i:dot)[\])]\s{0,2})"
# a dot with spaces before it: "example . com", "example .com"; "example. com" ends a sentence
_SPACED_DOT = r"\s{1,2}\.\s{0,2}"
_AT = r"\s{0,2}@\s{0,2}|\s{0,2}[\[(](?i:at)[\])]\s{0,2}"
_TLD = rf"(?:(?i:xn--)[a-zA-Z0-9\-]{{1,59}}|(?:[^\W\d_]|[{_MARKS}]){{2,63}})"
# Top-level domains a spaced email must end with: any two ASCII letters (a country's),
# the generic ones people have addresses at, punycode, and non-ASCII ones.
_GENERIC_TLDS = (
    "com net org edu gov mil int info biz name pro mobi app dev online site tech store shop "
    "email mail cloud xyz top live blog world today club digital agency company solutions "
    "systems services network group family life space website art design asia"
)
_KNOWN_TLD = (
    rf"(?:(?i:xn--)[a-zA-Z0-9\-]{{1,59}}|(?i:{'|'.join(_GENERIC_TLDS.split())}|[a-z]{{2}})"
    rf"|(?:[^\W\d_a-zA-Z]|[{_MARKS}]){{2,63}})(?![\w\-{_MARKS}])"
)
_LOCAL_REVERSED = re.compile(rf"{_LOCAL}{{1,64}}")  # matched in the reversed text
# one more part of a spaced local part ("ana . lopez"), in the reversed text: the dot may
# end the part before (a local part's characters include the dot)
_LOCAL_PART_REVERSED = re.compile(rf"(?:(?<=\.)|\s{{1,2}}\.)\s{{1,2}}{_LOCAL}{{1,64}}")
_DOMAIN = re.compile(rf"{_LABEL}(?:{_DOT}{_LABEL}){{0,8}}{_DOT}{_TLD}")
_SPACED_DOMAIN = re.compile(
    rf"{_LABEL}(?:(?:{_DOT}|{_SPACED_DOT}){_LABEL}){{0,8}}(?:{_DOT}|{_SPACED_DOT}){_KNOWN_TLD}"
)
# an "@" (or "[at]") after a local part's character and before a domain's
AT = re.compile(rf"(?<={_LOCAL})(?:{_AT})(?=[\w{_MARKS}])")


def spans(text: str, at_regex: re.Pattern[str] = AT) -> Iterator[tuple[int, int]]:
    """Where ``text`` holds an email, left to right, not overlapping; ``at_regex`` finds
    the separators it is found from."""
    reversed_text = ""
    last = 0
    for at in at_regex.finditer(text):
        if at.start() < last:
            continue
        end, spaced = _domain_end(text, at)
        if end is None:
            continue
        reversed_text = reversed_text or text[::-1]
        start = _local_start(reversed_text, len(text) - at.start(), spaced, last)
        if start is not None:
            last = end
            yield start, last


def _domain_end(text: str, at: re.Match[str]) -> tuple[int | None, bool]:
    """Where the domain after ``at`` ends, and whether it may be a spaced email's."""
    sep = at.group()
    one_sided = "@" in sep and sep[0].isspace() != sep[-1].isspace()
    spaced = _SPACED_DOMAIN.match(text, at.end())
    plain = None if one_sided else _DOMAIN.match(text, at.end())
    if spaced is not None and (plain is None or spaced.end() >= plain.end()):
        return spaced.end(), True
    return (None, False) if plain is None else (plain.end(), False)


def _local_start(reversed_text: str, at: int, spaced: bool, floor: int) -> int | None:
    """Where the local part ending at ``at`` (counted in the reversed text) starts in the
    text; ``None`` if there is none, or it would start before ``floor``."""
    local = _LOCAL_REVERSED.match(reversed_text, at)
    if local is None:
        return None
    end = local.end()
    for _ in range(4 if spaced else 0):
        part = _LOCAL_PART_REVERSED.match(reversed_text, end)
        if part is None or len(reversed_text) - part.end() < floor:
            break
        end = part.end()
    start = len(reversed_text) - end
    return start if start >= floor else None
