"""The store through the official client against a real ``waystone api`` and a real
``waystone worker``: the SDK's store calls and a graph's node (``get_store()``) see the
same items; another owner's token sees none of them; the reference's shapes and status
codes; no planted personal value is stored in plain form in any column."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from tests.conftest import ENCRYPTION_KEY
from tests.support.api import ApiSetup
from tests.support.scan import scan
from tests.support.store_graphs import MEMO

OPERATOR, ALICE, BOB = "operator-token", "alice-token", "bob-token"
EMAIL = "philippa.quennell@example.com"
CARD = "5555555555554444"
MARKER = "plain-marker-ibis"


@pytest.fixture
def api_setup(tmp_path: Path) -> ApiSetup:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice={ALICE}\nbob={BOB}\n")
    tokens.chmod(0o600)
    env = {
        "WAYSTONE_GRAPHS": MEMO,
        "WAYSTONE_API_TOKENS_FILE": str(tokens),
        "WAYSTONE_ENCRYPTION_KEY": ENCRYPTION_KEY,
    }
    return ApiSetup(env, token=OPERATOR)


@pytest.fixture
def clients(api: str) -> Iterator[dict[str, SyncLangGraphClient]]:
    keys = {"operator": OPERATOR, "alice": ALICE, "bob": BOB}
    with ExitStack() as stack:
        yield {
            who: stack.enter_context(get_sync_client(url=api, api_key=key))
            for who, key in keys.items()
        }


def keys(found: dict[str, Any]) -> list[str]:
    return sorted(item["key"] for item in found["items"])


def test_the_sdk_and_a_node_see_the_same_items_and_no_other_owner_sees_them(
    clients: dict[str, SyncLangGraphClient], database_url: str
) -> None:
    alice, bob, operator = clients["alice"], clients["bob"], clients["operator"]
    alice.store.put_item(["memories"], "from-sdk", {"note": f"{MARKER} {EMAIL} {CARD}"})
    thread = alice.threads.create()["thread_id"]
    done = alice.runs.wait(thread, "memo", input={"key": "from-node", "note": EMAIL})
    assert done["found"] == ["from-node", "from-sdk"]  # the node sees the SDK's item

    assert keys(alice.store.search_items(["memories"])) == ["from-node", "from-sdk"]
    item = alice.store.get_item(["memories"], "from-node")
    assert item["namespace"] == ["memories"] and item["value"]["note"].startswith("<pii:email:")
    assert alice.store.list_namespaces() == {"namespaces": [["memories"]]}
    assert alice.store.search_items(["memories"], filter={"note": EMAIL})["items"][0]["key"] == (
        "from-node"
    )

    assert bob.store.get_item(["memories"], "from-node") is None
    assert bob.store.search_items([]) == {"items": []}
    assert bob.store.list_namespaces() == {"namespaces": []}
    bob.store.delete_item(["memories"], "from-sdk")  # bob's own namespace: nothing there
    assert keys(alice.store.search_items(["memories"])) == ["from-node", "from-sdk"]
    found = operator.store.list_namespaces()["namespaces"]
    assert len(found) == 1 and found[0][0].startswith("owner:") and found[0][1:] == ["memories"]

    with psycopg.connect(database_url) as conn:
        assert scan(conn, [EMAIL, "philippa", CARD, MARKER]) == []

    alice.store.delete_item(["memories"], "from-sdk")
    assert keys(alice.store.search_items(["memories"])) == ["from-node"]


def test_the_store_answers_with_the_references_shapes_and_codes(
    clients: dict[str, SyncLangGraphClient], api: str
) -> None:
    lg = clients["operator"]
    lg.store.put_item(["a", "b"], "k1", {"n": 1, "tag": "x"})
    lg.store.put_item(["a", "c"], "k2", {"n": 2, "tag": "y"}, ttl=60)
    item = lg.store.get_item(["a", "b"], "k1")
    assert set(item) == {"namespace", "key", "value", "created_at", "updated_at"}
    assert item["value"] == {"n": 1, "tag": "x"}
    found = lg.store.search_items(["a"], filter={"tag": "y"}, limit=5)["items"]
    assert [(i["key"], i["score"]) for i in found] == [("k2", None)]
    assert lg.store.search_items(["a"], limit=1, offset=1)["items"][0]["key"] == "k1"
    assert lg.store.list_namespaces(prefix=["a"], max_depth=1) == {"namespaces": [["a"]]}
    assert lg.store.list_namespaces(suffix=["c"]) == {"namespaces": [["a", "c"]]}
    assert lg.store.get_item(["a", "b"], "missing") is None

    with httpx.Client(base_url=api, headers={"x-api-key": OPERATOR}) as http:
        assert http.get("/store/items", params={"namespace": "a.b"}).status_code == 400
        bad = {"namespace": ["a.b"], "key": "k", "value": {}}
        assert http.put("/store/items", json=bad).status_code == 422
        reserved = {"namespace": ["langgraph"], "key": "k", "value": {}}
        assert http.put("/store/items", json=reserved).status_code == 400
        empty = {"namespace": [], "key": "k", "value": {}}
        assert http.put("/store/items", json=empty).status_code == 400
        assert http.put("/store/items", json={"namespace": ["a"], "key": "k"}).status_code == 422
        unlimited = http.post("/store/items/search", json={"namespace_prefix": ["a"], "limit": 0})
        assert len(unlimited.json()["items"]) == 2  # 0 is the default of 10, as the reference
    with httpx.Client(base_url=api) as anonymous:
        put = {"namespace": ["a"], "key": "k3", "value": {}}
        assert anonymous.put("/store/items", json=put).status_code == 401
    assert lg.store.get_item(["a"], "k3") is None
