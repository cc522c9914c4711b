"""What a run's history keeps of a receipt: the whole of a small one, a bounded summary of
a large one (a tool call's whole output, a ``Command``'s state). The ledger's row for the
key keeps the receipt itself."""

from __future__ import annotations

from typing import Any

from waystone.effects._keys import canonical_json

SHOWN_CHARS = 1024  # a receipt up to this long (as canonical JSON) is shown whole
SHOWN_KEYS = 10  # the keys a summary names, at most


def receipt_id(receipt: dict[str, Any] | None) -> str | None:
    """The provider's id in a receipt: its ``id``, or the ``id`` of what a durable tool
    returned (kept as ``output``)."""
    for found in (receipt, (receipt or {}).get("output")):
        if isinstance(found, dict) and found.get("id") is not None:
            return str(found["id"])
    return None


def shown(receipt: dict[str, Any]) -> dict[str, Any]:
    """``receipt`` when it is short; else its id, size and first keys."""
    size = len(canonical_json(receipt))
    if size <= SHOWN_CHARS:
        return receipt
    summary: dict[str, Any] = {"chars": size, "keys": sorted(receipt)[:SHOWN_KEYS]}
    found = receipt_id(receipt)
    if found is not None:
        summary["id"] = found[: SHOWN_CHARS // 4]
    return {"summary": summary}
