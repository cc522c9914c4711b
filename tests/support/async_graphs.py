"""An async graph for workers driving many runs at once on one event loop: each run's first
node waits until every run of the batch has arrived in it (so they meet only when driven
at the same time), then for the test's word; its second node makes one async effect at
the provider. ``WAYSTONE_GRAPHS="gather=tests.support.async_graphs:gather_graph"``, with
``GATHER_RUNS`` (how many meet) and ``GATHER_DIR`` (where the word is given)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypedDict

import httpx
from langgraph.graph import StateGraph

import waystone
from tests.support.chain import chain

ARRIVED: set[str] = set()
ALL_IN: dict[str, asyncio.Event] = {}


class Gathered(TypedDict, total=False):
    name: str
    receipt: dict[str, Any]


def async_note_effect(url: str) -> Callable[..., Awaitable[dict[str, Any]]]:
    """A notification at the provider on ``url`` as an async effect, found again by its key."""

    async def find(key: str) -> dict[str, Any] | None:
        async with httpx.AsyncClient(timeout=10) as client:
            answer = await client.get(f"{url}/notifications", params={"client_ref": key})
        found = answer.json()
        return found[0] if found else None

    @waystone.effect(lookup=find, timeout_s=10)
    async def notify(to: str, body: str, *, key: str) -> dict[str, Any]:
        async with httpx.AsyncClient(timeout=10) as client:
            answer = await client.post(
                f"{url}/notifications", json={"to": to, "body": body, "client_ref": key}
            )
        answer.raise_for_status()
        sent: dict[str, Any] = answer.json()
        return sent

    return notify


def gather_graph() -> StateGraph[Any]:
    url = os.environ["WAYSTONE_PAYMENTS_URL"]
    runs = int(os.environ["GATHER_RUNS"])
    where = Path(os.environ["GATHER_DIR"])

    notify = async_note_effect(url)

    async def meet(state: Gathered) -> dict[str, Any]:
        everyone = ALL_IN.setdefault("batch", asyncio.Event())
        ARRIVED.add(state["name"])
        if len(ARRIVED) >= runs:
            (where / "all-in").write_text(str(len(ARRIVED)))
            everyone.set()
        await asyncio.wait_for(everyone.wait(), timeout=120)
        while not (where / "go").exists():  # the test looks at the worker meanwhile
            await asyncio.sleep(0.05)
        return {}

    async def tell(state: Gathered) -> dict[str, Any]:
        return {"receipt": await notify(to=f"{state['name']}@example.com", body="met")}

    return chain(Gathered, ("meet", meet), ("tell", tell))
