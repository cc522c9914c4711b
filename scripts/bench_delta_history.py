"""A DeltaChannel's history on a 200-checkpoint chain: the time of one read through
LangGraph's stock async saver, Waystone's async saver and Waystone's sync saver (the goal:
Waystone's async within 2x of the stock async).

    PYTHONPATH=. python scripts/bench_delta_history.py [--url URL] [--length 200]
        [--repeat 30] [--json]

Each saver reads a chain it wrote itself (a snapshot seed at its first checkpoint, one
write to the channel at every checkpoint), from its head. The figure is the median of
``--repeat`` reads in alternating rounds, after two warm-up rounds. Run from the checkout
(``PYTHONPATH=.``) so that its ``waystone`` is the one measured. ``--url`` is a database
to use (default: a fresh one on the embedded Postgres).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.serde.types import _DeltaSnapshot

from waystone import AsyncWaystoneSaver

CHANNEL = "items"


async def _chain(saver: Any, length: int) -> dict[str, Any]:
    thread_id = str(uuid.uuid4())
    parent: dict[str, Any] | None = None
    for step in range(length):
        config: dict[str, Any] = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        if parent is not None:
            config["configurable"]["checkpoint_id"] = parent["configurable"]["checkpoint_id"]
        checkpoint = empty_checkpoint()
        checkpoint["id"] = str(uuid6(clock_seq=step))
        new_versions: dict[str, Any] = {}
        if step == 0:
            checkpoint["channel_values"][CHANNEL] = _DeltaSnapshot([0])
            new_versions[CHANNEL] = "v0"
        checkpoint["channel_versions"][CHANNEL] = f"v{step:05d}"
        meta: Any = {"source": "loop", "step": step, "parents": {}}
        parent = dict(await saver.aput(config, checkpoint, meta, new_versions))
        await saver.aput_writes(parent, [(CHANNEL, step)], str(uuid.uuid4()))
    assert parent is not None
    return parent


async def _timed(reads: dict[str, Any], repeat: int) -> dict[str, float]:
    """The median milliseconds of each read, taken in alternating rounds (so a busy
    machine slows each of them alike), after two warm-up rounds."""
    times: dict[str, list[float]] = {name: [] for name in reads}
    for round_ in range(repeat + 2):
        for name, read in reads.items():
            started = time.perf_counter()
            await read()
            if round_ >= 2:
                times[name].append((time.perf_counter() - started) * 1000)
    return {name: statistics.median(taken) for name, taken in times.items()}


async def measure(url: str, length: int, repeat: int) -> dict[str, Any]:
    async with (
        AsyncPostgresSaver.from_conn_string(url) as stock,
        AsyncWaystoneSaver.from_conn_string(url) as ours,
    ):
        await stock.setup()
        await ours.setup()
        theirs_head = await _chain(stock, length)
        our_head = await _chain(ours, length)
        channels = [CHANNEL]

        async def stock_async() -> Any:
            return await stock.aget_delta_channel_history(config=theirs_head, channels=channels)

        async def waystone_async() -> Any:
            return await ours.aget_delta_channel_history(config=our_head, channels=channels)

        async def waystone_sync() -> Any:
            return ours.get_delta_channel_history(config=our_head, channels=channels)

        writes = {
            "stock_writes": len((await stock_async())[CHANNEL]["writes"]),
            "waystone_writes": len((await waystone_async())[CHANNEL]["writes"]),
        }
        medians = await _timed(
            {
                "stock_async_ms": stock_async,
                "waystone_async_ms": waystone_async,
                "waystone_sync_ms": waystone_sync,
            },
            repeat,
        )
    out: dict[str, Any] = {"length": length, "repeat": repeat, **writes, **medians}
    out["ratio_async"] = out["waystone_async_ms"] / out["stock_async_ms"]
    return out


def _fresh_database() -> tuple[str, Any]:
    from waystone._db import embedded

    home = Path(tempfile.mkdtemp(prefix="bench-delta-"))
    admin = embedded.ensure_server(home)
    name = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]
    info = psycopg.conninfo.conninfo_to_dict(admin)
    info["dbname"] = name
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items()}), home


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url")
    parser.add_argument("--length", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    home = None
    url = args.url
    if url is None:
        url, home = _fresh_database()
    try:
        out = asyncio.run(measure(url, args.length, args.repeat))
    finally:
        if home is not None:
            from waystone._db import embedded

            embedded.stop(home)
    if args.json:
        print(json.dumps(out))
        return
    print(f"DeltaChannel history on a {out['length']}-checkpoint chain, median of {args.repeat}")
    print(f"  stock async     {out['stock_async_ms']:7.2f} ms  ({out['stock_writes']} writes)")
    print(
        f"  waystone async  {out['waystone_async_ms']:7.2f} ms  ({out['waystone_writes']} writes)"
    )
    print(f"  waystone sync   {out['waystone_sync_ms']:7.2f} ms")
    print(f"  waystone async / stock async: {out['ratio_async']:.2f}x (goal <= 2x)")


if __name__ == "__main__":
    main()
