"""Event ids of the stream log, among those made from checkpoints.

A committed event's id is ``<checkpoint_id>.<tag>`` (tags ``0m``.. to ``5r``, see
:mod:`waystone.web.stream`). A live event made during the step that follows root
checkpoint ``C`` is ``C.7<attempt>.<seq>``: after ``C``'s own events, before the next
checkpoint's, its attempt's (the lease token) in order, and an earlier attempt's first.
``C.6<attempt>`` marks that the attempt's worker had reached ``C``: a hidden event. Ids
sort as strings.
"""

from __future__ import annotations

NO_CHECKPOINT = "0"  # before any checkpoint id (they start with a hex digit above 0)
MARK = "6"
LIVE = "7"


def live(checkpoint: str, attempt: int, seq: int) -> str:
    """The id of the ``seq``-th live event (from 1) of ``attempt``'s step after ``checkpoint``."""
    return f"{checkpoint}.{LIVE}{attempt:010d}.{seq:08d}"


def abandoned(checkpoint: str, attempt: int) -> str:
    """The id of the event saying that earlier attempts abandoned the step after
    ``checkpoint``: before ``attempt``'s own events of that step."""
    return live(checkpoint, attempt, 0)


def mark(checkpoint: str, attempt: int) -> str:
    return f"{checkpoint}.{MARK}{attempt:010d}"


def left_over(checkpoint: str) -> tuple[str, str]:
    """The bounds (exclusive) of every attempt's live events of the step after ``checkpoint``."""
    return f"{checkpoint}.{LIVE}", f"{checkpoint}.{int(LIVE) + 1}"


def checkpoint_of(event_id: str) -> str:
    return event_id.partition(".")[0]
