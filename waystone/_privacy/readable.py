"""Identifiers stored readable: thread ids, start keys, signal names and signal keys.

Rows are found, joined and locked by them, so they are never redacted nor sealed; one that
holds personal data would put it in plain form in every row of its run. Such an identifier
is refused before anything is written.
"""

from __future__ import annotations

from waystone._privacy.pii import Detector
from waystone.errors import BadInput

_DETECTOR = Detector()


def refuse_personal_data(kind: str, value: str | None, detector: Detector = _DETECTOR) -> None:
    """Raise :class:`BadInput` when ``value`` (a ``kind``: "thread id", "start key", ...)
    holds personal data. The message names what was found, never the value itself."""
    if not value:
        return
    found = next(iter(detector.find(value)), None)
    if found is not None:
        raise BadInput(
            f"the {kind} holds personal data ({found.kind}, at character {found.start + 1}): "
            f"a {kind} is stored readable, never redacted or encrypted; choose one without "
            "personal data (an order number, a uuid)"
        )
