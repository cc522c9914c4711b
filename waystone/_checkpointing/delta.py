"""A DeltaChannel's history, read as LangGraph's Postgres saver reads it, for sync and async.

LangGraph rebuilds a ``DeltaChannel`` from the writes along the parent chain back to its
last snapshot (its seed). The stock saver finds them in two queries: pages of the chain's
checkpoints, newest first, until every channel has its seed, then the writes and seeds
themselves. :func:`delta_history` is that walk with no I/O: a generator that yields each
query and is sent its rows, so one walk serves the sync saver (:func:`run`) and the async
one (:func:`arun`). What it folds and builds is the stock saver's own code.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import Any, cast

from langgraph.checkpoint.base import DeltaChannelHistory
from langgraph.checkpoint.postgres.base import (
    _DELTA_PAGE_SIZE,
    BasePostgresSaver,
    _build_delta_stage1_sql,
    _build_delta_stage2_sql,
    _DeltaStage2Row,
)
from psycopg import AsyncCursor, Cursor
from psycopg.rows import DictRow

Query = tuple[str, list[Any]]
Walk = Generator[Query, list[DictRow], dict[str, DeltaChannelHistory]]


def delta_history(
    saver: BasePostgresSaver,
    thread_id: str,
    checkpoint_ns: str,
    checkpoint_id: str,
    channels: Sequence[str],
) -> Walk:
    """The histories of ``channels`` at ``checkpoint_id``: yields queries, is sent rows."""
    channels = list(channels)
    if not channels:
        return {}
    stage1 = _build_delta_stage1_sql(channels, paged=True, include_cursor=True)
    parent_of: dict[str, str | None] = {}
    ver_by_i_by_cid: list[dict[str, str | None]] = [{} for _ in channels]
    hb_by_i_by_cid: list[dict[str, bool]] = [{} for _ in channels]
    inline_by_i_by_cid: list[dict[str, Any]] = [{} for _ in channels]
    chain_by_ch: dict[str, list[str]] = {ch: [] for ch in channels}
    seed_ver_by_ch: dict[str, str | None] = {ch: None for ch in channels}
    seed_inline_by_ch: dict[str, Any] = {}
    walk_cursor_by_ch: dict[str, str | None] = {}
    seeded: set[str] = set()
    cursor: str | None = checkpoint_id
    while True:
        params: list[Any] = [p for ch in channels for p in (ch, ch, ch, ch)]
        page = yield stage1, [*params, thread_id, checkpoint_ns, cursor, _DELTA_PAGE_SIZE]
        if not page:
            break
        oldest = saver._ingest_stage1_page(
            cast("list[Mapping[str, Any]]", page),
            channels,
            parent_of,
            ver_by_i_by_cid,
            hb_by_i_by_cid,
            inline_by_i_by_cid,
        )
        saver._try_advance_walks(
            checkpoint_id,
            channels,
            parent_of,
            ver_by_i_by_cid,
            hb_by_i_by_cid,
            inline_by_i_by_cid,
            chain_by_ch,
            seed_ver_by_ch,
            seed_inline_by_ch,
            walk_cursor_by_ch,
            seeded,
        )
        if len(seeded) == len(channels) or len(page) < _DELTA_PAGE_SIZE:
            break  # every seed found, or the chain's first checkpoint reached
        cursor = oldest
        stage1 = _build_delta_stage1_sql(channels, paged=True)

    with_chain = [ch for ch in channels if chain_by_ch[ch]]
    with_seed = [ch for ch in channels if seed_ver_by_ch[ch] is not None]
    stage2 = _build_delta_stage2_sql(channels_with_chain=with_chain, channels_with_seed=with_seed)
    rows: list[DictRow] = []
    if stage2:
        at = (thread_id, checkpoint_ns)
        params = [p for ch in with_chain for p in (*at, ch, chain_by_ch[ch])]
        params += [p for ch in with_seed for p in (*at, ch, seed_ver_by_ch[ch])]
        rows = yield stage2, params
    return saver._build_delta_channels_writes_history(
        channels=channels,
        chain_by_ch=chain_by_ch,
        seed_ver_by_ch=seed_ver_by_ch,
        seed_inline_by_ch=seed_inline_by_ch,
        stage2_rows=cast("list[_DeltaStage2Row]", rows),
    )


def run(walk: Walk, cur: Cursor[DictRow]) -> dict[str, DeltaChannelHistory]:
    """``walk`` to its end on a sync cursor."""
    try:
        query = next(walk)
        while True:
            cur.execute(*query)
            query = walk.send(cur.fetchall())
    except StopIteration as done:
        return cast(dict[str, DeltaChannelHistory], done.value)


async def arun(walk: Walk, cur: AsyncCursor[DictRow]) -> dict[str, DeltaChannelHistory]:
    """``walk`` to its end on an async cursor."""
    try:
        query = next(walk)
        while True:
            await cur.execute(*query)
            query = walk.send(await cur.fetchall())
    except StopIteration as done:
        return cast(dict[str, DeltaChannelHistory], done.value)
