"""Many clients streaming at once from one ``waystone api`` process (the official async
client), the runs driven by one async worker: every stream gets all of its run's events,
once each and in order, its own and no other thread's."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph_sdk import get_client

from tests.support.api import TOKEN, ApiSetup
from tests.support.graphs import ASSIST

MODES = ["values", "updates", "messages-tuple"]
STREAMS = 20


@pytest.fixture
def api_setup() -> ApiSetup:
    return ApiSetup({"WAYSTONE_GRAPHS": ASSIST}, worker=("--async", "--concurrency", str(STREAMS)))


async def streamed(url: str, n: int) -> tuple[str, list[Any]]:
    lg = get_client(url=url, api_key=TOKEN)
    try:
        thread_id = (await lg.threads.create())["thread_id"]
        said = {"messages": [{"role": "user", "content": f"hello {n}"}]}
        parts = [
            p async for p in lg.runs.stream(thread_id, "assist", input=said, stream_mode=MODES)
        ]
        return f"hello {n}", parts
    finally:
        await lg.aclose()


def test_many_streams_on_one_server_all_get_their_events(api: str) -> None:
    async def all_at_once() -> list[tuple[str, list[Any]]]:
        together = asyncio.gather(*(streamed(api, n) for n in range(STREAMS)))
        return await asyncio.wait_for(together, timeout=180)

    for said, parts in asyncio.run(all_at_once()):
        assert [p.event for p in parts] == ["metadata", "values", "messages", "updates", "values"]
        ids = [p.id for p in parts[1:]]
        assert ids == sorted(set(ids))  # once each, in order
        assert [m["content"] for m in parts[-1].data["messages"]] == [said, f"echo {said}"]
