"""The store on Postgres: LangGraph's ``PostgresStore`` behind the runtime, the same one a
graph's nodes get (sync and async), each owner's namespaces apart, values redacted and
sealed at rest, semantic search, TTLs swept."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph.store.memory import InMemoryStore

from tests.conftest import ENCRYPTION_KEY, wait_until
from tests.support.scan import scan
from tests.support.store_graphs import MEMORIES, amemo_graph, memo_graph
from waystone import Runtime, Settings
from waystone.config import parse_key
from waystone.runtime import RunStatus
from waystone.worker.ticker import CronTicker

EMAIL = "ottoline.quayle@example.com"
CARD = "4111111111111111"
MARKER = "plain-marker-heron"  # not personal data: only sealing hides it


@pytest.fixture
def rt_graphs() -> dict[str, Any]:
    return {"memo": memo_graph, "amemo": amemo_graph}


@pytest.fixture
def sealed_rt(database_url: str) -> Iterator[Runtime]:
    settings = Settings(database_url=database_url, encryption_key=parse_key(ENCRYPTION_KEY))
    with Runtime(settings, graphs={"memo": memo_graph}) as made:
        yield made


def test_items_are_put_read_searched_listed_and_deleted(rt: Runtime) -> None:
    store = rt.store
    store.put(("users", "u1", "prefs"), "theme", {"colour": "dark", "size": 3})
    store.put(("users", "u2", "prefs"), "theme", {"colour": "light", "size": 5})
    item = store.get(("users", "u1", "prefs"), "theme")
    assert item is not None and item.value == {"colour": "dark", "size": 3}
    found = store.search(("users",), filter={"colour": "light"})
    assert [(i.namespace, i.value["size"]) for i in found] == [(("users", "u2", "prefs"), 5)]
    assert store.list_namespaces(prefix=("users",), max_depth=2) == [
        ("users", "u1"),
        ("users", "u2"),
    ]
    store.delete(("users", "u1", "prefs"), "theme")
    assert store.get(("users", "u1", "prefs"), "theme") is None


def test_a_nodes_store_is_the_runtimes(rt: Runtime) -> None:
    rt.store.put(MEMORIES, "from-outside", {"note": "put by the caller"})
    done = rt.invoke("memo", {"key": "from-node", "note": "put by the node"})
    assert done.state == "done", done
    values = rt.graph("memo").get_state(rt.config(done.thread_id)).values
    assert values["found"] == ["from-node", "from-outside"]
    item = rt.store.get(MEMORIES, "from-node")
    assert item is not None and item.value == {"note": "put by the node"}


def test_an_async_nodes_runtime_store_is_the_runtimes(rt: Runtime) -> None:
    async def drive() -> RunStatus:
        await rt.store.aput(MEMORIES, "from-outside", {"note": "put by the caller"})
        return await rt.ainvoke("amemo", {"key": "from-async-node", "note": "async"})

    done = asyncio.run(drive())
    assert done.state == "done", done
    values = rt.graph("amemo").get_state(rt.config(done.thread_id)).values
    assert values["found"] == ["from-async-node", "from-outside"]


def test_an_owners_namespaces_are_its_own(rt: Runtime) -> None:
    alice, bob = rt.store_for("alice"), rt.store_for("bob")
    alice.put(MEMORIES, "diary", {"note": "alice's"})
    assert alice.get(MEMORIES, "diary") is not None
    assert [i.namespace for i in alice.search(())] == [MEMORIES]
    assert alice.list_namespaces() == [MEMORIES]
    assert bob.get(MEMORIES, "diary") is None
    assert bob.search(()) == [] and bob.list_namespaces() == []
    assert rt.store.get(MEMORIES, "diary") is None  # the operator's ("memories",) is another
    assert len(rt.store.search(())) == 1  # but the operator sees every namespace

    thread = rt.create_thread(owner="alice").thread_id
    rt.start_on_thread("memo", {"key": "by-alices-run", "note": "n"}, thread_id=thread)
    assert rt.run(thread).state == "done"
    values = rt.graph("memo").get_state(rt.config(thread)).values
    assert values["found"] == ["by-alices-run", "diary"]  # the run's store is its owner's
    assert alice.get(MEMORIES, "by-alices-run") is not None
    assert bob.search(()) == []


def test_no_personal_value_is_stored_in_plain_form_and_filters_run_on_opened_values(
    sealed_rt: Runtime, sql: psycopg.Connection[Any]
) -> None:
    store = sealed_rt.store
    store.put(("people", CARD), EMAIL, {"email": EMAIL, "note": MARKER, "n": 1})
    store.put(("people", "other"), "k", {"email": "nobody", "note": MARKER, "n": 7})
    item = store.get(("people", CARD), EMAIL)
    assert item is not None and item.value["note"] == MARKER
    assert item.value["email"].startswith("<pii:email:"), item.value  # a token, as in a run
    by_email = store.search(("people",), filter={"email": EMAIL})
    assert [i.key for i in by_email] == [item.key]
    assert [i.value["n"] for i in store.search(("people",), filter={"n": {"$gt": 3}})] == [7]
    done = sealed_rt.invoke("memo", {"key": "node", "note": f"{MARKER} {EMAIL}"})
    assert done.state == "done"

    assert scan(sql, [EMAIL, "ottoline", CARD, MARKER]) == []
    values = [v for (v,) in sql.execute("SELECT value FROM public.store").fetchall()]
    assert values and all(set(v) == {"$sealed"} for v in values), values


def test_without_a_key_values_are_redacted_and_readable(
    rt: Runtime, sql: psycopg.Connection[Any]
) -> None:
    rt.store.put(("people",), "p", {"email": EMAIL, "note": MARKER})
    assert scan(sql, [EMAIL, "ottoline"]) == []
    assert scan(sql, [MARKER]), "the scan sees what is stored in plain form"
    assert [i.key for i in rt.store.search(("people",), filter={"email": EMAIL})] == ["p"]


@pytest.mark.parametrize("key", [None, ENCRYPTION_KEY], ids=["redacted", "sealed"])
def test_semantic_search_ranks_by_the_configured_embedding(
    database_url: str, tmp_path: Path, key: str | None
) -> None:
    config = tmp_path / "langgraph.json"
    index = {"embed": "tests.support.store_graphs:embed", "dims": 4, "fields": ["text"]}
    config.write_text(json.dumps({"graphs": {}, "store": {"index": index}}))
    sealing = None if key is None else parse_key(key)
    settings = Settings(database_url=database_url, langgraph_json=config, encryption_key=sealing)
    with Runtime(settings) as rt:
        rt.store.put(("docs",), "pets", {"text": "cat and dog, cat again"})
        rt.store.put(("docs",), "roads", {"text": "a car by a tree"})
        found = rt.store.search(("docs",), query="my cat")
        assert [i.key for i in found] == ["pets", "roads"]
        assert found[0].score is not None and found[0].score > (found[1].score or 0)


def test_expired_items_are_not_read_and_a_sweep_deletes_them(
    rt: Runtime, sql: psycopg.Connection[Any]
) -> None:
    rt.store.put(MEMORIES, "brief", {"note": "soon gone"}, ttl=0.001)  # 60 ms
    rt.store.put(MEMORIES, "kept", {"note": "stays"})

    def expired() -> bool:
        row = sql.execute(
            "SELECT expires_at < now() FROM public.store WHERE key = 'brief'"
        ).fetchone()
        return bool(row and row[0])

    wait_until(expired, "the item's TTL to pass")
    assert rt.store.get(MEMORIES, "brief") is None
    assert rt.sweep_store() == 1
    assert [k for (k,) in sql.execute("SELECT key FROM public.store").fetchall()] == ["kept"]


def test_a_workers_ticker_sweeps_the_expired_items(
    database_url: str, tmp_path: Path, sql: psycopg.Connection[Any]
) -> None:
    config = tmp_path / "langgraph.json"
    ttl = {"sweep_interval_minutes": 0.001, "default_ttl": 0.001}  # 60 ms each
    config.write_text(json.dumps({"graphs": {}, "store": {"ttl": ttl}}))
    stopping = threading.Event()
    with Runtime(Settings(database_url=database_url, langgraph_json=config)) as rt:
        rt.store.put(MEMORIES, "brief", {"note": "soon gone"})  # the default TTL
        rt.store.put(MEMORIES, "kept", {"note": "stays"}, ttl=None)
        ticker = CronTicker(rt, list, "test-worker", stopping, poll_seconds=0.05)
        thread = ticker.start()
        try:
            rows = "SELECT key FROM public.store"
            wait_until(lambda: sql.execute(rows).fetchall() == [("kept",)], "the sweep")
        finally:
            stopping.set()
            ticker.wake.set()
            thread.join(timeout=10)


def test_a_store_of_your_own_is_the_one_nodes_and_callers_get(database_url: str) -> None:
    mine = InMemoryStore()
    settings = Settings(database_url=database_url)
    own_store = memo_graph().compile(store=InMemoryStore())  # compiled with a store: kept
    with Runtime(settings, graphs={"memo": memo_graph, "own": own_store}, store=mine) as rt:
        assert rt.store is mine
        assert rt.invoke("memo", {"key": "k", "note": "n"}).state == "done"
        assert mine.get(MEMORIES, "k") is not None
        assert rt.invoke("own", {"key": "elsewhere", "note": "n"}).state == "done"
        assert mine.get(MEMORIES, "elsewhere") is None
