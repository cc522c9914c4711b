"""A checkpoint at rest: personal data redacted, and with a key, everything sealed.

LangGraph keeps str/int/float/bool channel values inline in the checkpoint's JSONB, where
the sealed serializer never sees them; boxed, they travel as blobs through it instead.
Metadata is sealed key by key, except the keys LangGraph queries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)

from waystone._privacy.seal import Sealer, open_value

BOX = "__waystone_boxed__"
STRUCTURAL = frozenset({"source", "step", "parents", "run_id"})  # left readable: queried


def protect(
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
    redact: Callable[[Any], Any] | None,
    sealer: Sealer | None,
) -> tuple[Checkpoint, CheckpointMetadata]:
    """The checkpoint and metadata as they are to be written; ``metadata`` is all that is
    stored of it, as LangGraph's ``get_serializable_checkpoint_metadata`` gives it (the
    config's values merged in, NUL out of its strings: a sealed value would keep them from
    that clean-up, and a NUL inside an email hides it from redaction)."""
    values = checkpoint["channel_values"]
    if redact is not None:
        # What this save writes: the channels that changed (as blobs) and the primitives
        # (inline); an unchanged blob is not written again, so it is not scanned again.
        values = {k: redact(v) if k in new_versions or _inline(v) else v for k, v in values.items()}
        metadata = redact(metadata)
    if sealer is not None:
        values = {
            k: {BOX: v} if isinstance(v, str | int | float | bool) else v for k, v in values.items()
        }
        metadata = {k: v if k in STRUCTURAL else sealer.seal(v) for k, v in metadata.items()}  # type: ignore[assignment]
    return {**checkpoint, "channel_values": values}, metadata


def reveal(sealer: Sealer | None, found: CheckpointTuple | None) -> CheckpointTuple | None:
    """A checkpoint as read back, unboxed and its metadata opened (in place)."""
    if found is None:
        return None
    values = found.checkpoint.get("channel_values", {})
    for k, v in list(values.items()):
        values[k] = _unbox(v)
    for k, v in list(found.metadata.items()):
        found.metadata[k] = open_value(sealer, v)  # type: ignore[literal-required]
    return found


def reveal_history(
    found: Mapping[str, DeltaChannelHistory],
) -> dict[str, DeltaChannelHistory]:
    """DeltaChannels' histories as read back: a seed that was an inline primitive (a
    channel that held a number before it became a DeltaChannel) unboxed."""
    out: dict[str, DeltaChannelHistory] = {}
    for channel, history in found.items():
        out[channel] = history
        if "seed" in history:
            out[channel] = {**history, "seed": _unbox(history["seed"])}
    return out


def split_filter(
    filter: dict[str, Any] | None, sealer: Sealer | None
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """A metadata filter as (what Postgres can match, what must be matched once opened):
    with a sealer, every key but the structural ones is sealed, and a sealed value never
    equals the plain one asked for."""
    if not filter or sealer is None:
        return filter, {}
    plain = {k: v for k, v in filter.items() if k in STRUCTURAL}
    return plain or None, {k: v for k, v in filter.items() if k not in STRUCTURAL}


def matching(
    found: Iterable[CheckpointTuple | None], sealed: dict[str, Any], limit: int | None
) -> Iterator[CheckpointTuple]:
    """The opened checkpoints whose metadata contains ``sealed``, up to ``limit``."""
    kept = 0
    for item in found:
        assert item is not None
        if sealed and not contains(dict(item.metadata), sealed):
            continue
        yield item
        kept += 1
        if limit is not None and kept >= limit:
            return


def contains(have: Any, want: Any) -> bool:
    """``have @> want`` as JSONB containment has it (what the stock saver's filter asks of
    Postgres): objects by their keys, arrays by their elements, anything else by value."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(
            k in have and contains(have[k], v) for k, v in want.items()
        )
    if isinstance(want, list):
        return isinstance(have, list) and all(any(contains(h, w) for h in have) for w in want)
    if isinstance(have, bool) or isinstance(want, bool):
        return have is want  # JSON's true is not 1
    return bool(have == want)


def _unbox(value: Any) -> Any:
    return value[BOX] if isinstance(value, dict) and set(value) == {BOX} else value


def _inline(value: Any) -> bool:
    """LangGraph keeps these in the checkpoint row itself, rewritten on every save."""
    return value is None or isinstance(value, str | int | float | bool)
