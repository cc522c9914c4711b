"""What to do with an effect, given what the ledger says (docs/architecture.md, section 5).

Pure functions of values, no I/O: the execute node asks, then acts.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

LedgerStatus = Literal[
    "intent", "applied", "confirmed", "failed", "unknown", "interrupted", "absent"
]


class Step(StrEnum):
    APPLY = "apply"  # no trace of it, or provably absent: call the provider with the key
    LOOKUP = "lookup"  # the outcome is unknown: ask the provider by key first
    CONFIRM = "confirm"  # it happened: skip apply, read it back
    REUSE = "reuse"  # confirmed: skip everything, reuse the stored receipt
    NEEDS_HUMAN = "needs-human"  # cannot be known safely: never guess
    FAILED = "failed"  # a permanent failure was recorded: do not retry


def next_step(status: LedgerStatus | None, *, has_lookup: bool, dedupes: bool) -> Step:
    """The reconciliation table.

    ============================  =====================
    ledger says                   step
    ============================  =====================
    nothing                       apply
    confirmed                     reuse
    applied                       confirm
    intent/unknown, has lookup    lookup
    intent/unknown, dedupes       apply (same key)
    intent/unknown, neither       needs-human
    failed                        failed
    interrupted                   apply (same key)
    absent (a person settled it)  apply (same key)
    ============================  =====================

    An interrupted call raised ``interrupt()`` before it finished: its node runs again
    from its start on resume, and the call is made again, as LangGraph makes it. An
    absent one was settled by a person who found no trace of it at the provider: the
    lookup-says-absent row, with the person as the lookup.
    """
    if status is None or status in ("interrupted", "absent"):
        return Step.APPLY
    if status == "confirmed":
        return Step.REUSE
    if status == "applied":
        return Step.CONFIRM
    if status == "failed":
        return Step.FAILED
    if has_lookup:
        return Step.LOOKUP
    if dedupes:
        return Step.APPLY
    return Step.NEEDS_HUMAN


def after_lookup(found: bool) -> Step:
    """After a lookup: found means applied; absent means it is safe to apply with the key.

    A lookup that proves absence makes a re-apply safe even without key deduplication,
    because the previous attempt never took effect at the provider.
    """
    return Step.CONFIRM if found else Step.APPLY
