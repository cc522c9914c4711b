"""Graphs whose nodes use the LangGraph store (``get_store()``, ``runtime.store``), never
compiled with one, and a tiny deterministic embedding for semantic search."""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.config import get_store
from langgraph.graph import StateGraph
from langgraph.runtime import Runtime

from tests.support.chain import chain

MEMORIES = ("memories",)
WORDS = ("cat", "dog", "car", "tree")  # the embedding's dimensions


class Memo(TypedDict, total=False):
    key: str
    note: str
    found: list[str]


def _remember(state: Memo) -> dict[str, Any]:
    """Put the input's note under its key, then list every key of the namespace."""
    store = get_store()
    store.put(MEMORIES, state["key"], {"note": state["note"]})
    return {"found": sorted(item.key for item in store.search(MEMORIES, limit=100))}


async def _aremember(state: Memo, runtime: Runtime[Any]) -> dict[str, Any]:
    store = runtime.store
    assert store is not None, "the runtime attaches its store to every graph"
    await store.aput(MEMORIES, state["key"], {"note": state["note"]})
    found = await store.asearch(MEMORIES, limit=100)
    return {"found": sorted(item.key for item in found)}


def memo_graph() -> StateGraph[Any]:
    """One sync node that puts and searches with ``get_store()``."""
    return chain(Memo, ("remember", _remember))


def amemo_graph() -> StateGraph[Any]:
    """The same, async, with ``runtime.store``."""
    return chain(Memo, ("remember", _aremember))


MEMO = "memo=tests.support.store_graphs:memo_graph"


def embed(texts: list[str]) -> list[list[float]]:
    """Each text as the count of each of :data:`WORDS` in it (plus a little, so that no
    vector is zero)."""
    return [[text.lower().count(w) + 0.01 for w in WORDS] for text in texts]
