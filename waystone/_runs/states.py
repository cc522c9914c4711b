"""Run states and the transitions allowed between them (docs/architecture.md, section 4).

This table is mirrored in the database (``waystone.allowed_transitions``), where a trigger
rejects anything else; a test checks that the two agree.

``queued -> failed`` is there for cancelling: a cancelled run ends ``failed`` with reason
``cancelled``, and a run can be cancelled before any worker picked it up; without the edge
a queued run could only be cancelled by first running it, which is exactly what
cancelling must prevent.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

RunState = Literal["queued", "running", "waiting", "done", "failed", "needs-human"]
STATES: Final[tuple[str, ...]] = get_args(RunState)
TERMINAL: Final[frozenset[str]] = frozenset({"done"})

ALLOWED: Final[dict[str, frozenset[str]]] = {
    "queued": frozenset({"running", "failed"}),
    "running": frozenset({"waiting", "done", "failed", "needs-human"}),
    "waiting": frozenset({"running", "failed", "needs-human"}),
    "done": frozenset(),
    "failed": frozenset({"queued", "needs-human"}),
    "needs-human": frozenset({"queued", "failed"}),
}


def is_allowed(src: str, dst: str) -> bool:
    """True when a run may move from ``src`` to ``dst``."""
    return dst in ALLOWED.get(src, frozenset())


def transition_pairs() -> list[tuple[str, str]]:
    """Every allowed (from, to) pair, sorted; the rows of the database's table."""
    return sorted((src, dst) for src, dsts in ALLOWED.items() for dst in dsts)
