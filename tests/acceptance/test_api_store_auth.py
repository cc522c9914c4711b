"""The store under a custom auth, as ``langgraph dev`` applies it: the reference
documentation's ``Auth`` example (:mod:`tests.support.auth_example`), whose store handler
lets a user reach only the namespaces that start with the user's identity, gives the
same answers on a real ``waystone api`` as on ``langgraph dev``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT
from tests.support.api import ApiSetup

EXAMPLE = ROOT / "tests" / "support" / "auth_example.py"
BEARERS = {"alice": "user1-token", "bob": "user2-token"}

# What langgraph dev (langgraph-api 0.16.7, in memory) answered to the calls below.
REFERENCE: list[tuple[str, Any]] = [
    ("nobody puts", [401, None]),
    ("alice puts hers", [204, None]),
    ("alice puts in bob's", [403, None]),
    ("alice puts unprefixed", [403, None]),
    ("bob puts his", [204, None]),
    ("alice gets hers", [200, [["user1", "notes"], "k", {"a": 1}]]),
    ("alice gets bob's", [403, None]),
    ("alice searches hers", [200, [[["user1", "notes"], "k", {"a": 1}]]]),
    ("alice searches bob's", [403, None]),
    ("alice searches all", [500, None]),
    ("alice lists hers", [200, [["user1", "notes"]]]),
    ("alice lists all", [500, None]),  # the example's handler fails on no namespace
    ("alice deletes bob's", [403, None]),
    ("bob gets his", [200, [["user2", "notes"], "k", {"b": 1}]]),
    ("alice deletes hers", [204, None]),
    ("alice gets hers, deleted", [200, None]),
]
# The reference fails on a search without namespace_prefix before its handler runs;
# Waystone asks the handler, which refuses.
DIFFERENT = {"alice searches all": [403, None]}


@pytest.fixture
def api_setup(tmp_path: Path) -> ApiSetup:
    config = tmp_path / "langgraph.json"
    config.write_text(
        json.dumps(
            {
                "dependencies": ["."],
                "graphs": {"agent": f"{EXAMPLE}:graph"},
                "auth": {"path": f"{EXAMPLE}:auth"},
            }
        )
    )
    return ApiSetup({"WAYSTONE_LANGGRAPH_JSON": str(config)}, worker=None)


def shown(reply: httpx.Response) -> list[Any]:
    """The status, and what a client relies on in the body."""
    body = reply.json() if reply.content and reply.status_code < 400 else None
    if isinstance(body, dict) and "items" in body:
        body = sorted([i["namespace"], i["key"], i["value"]] for i in body["items"])
    elif isinstance(body, dict) and "namespaces" in body:
        body = sorted(body["namespaces"])
    elif isinstance(body, dict):
        body = [body["namespace"], body["key"], body["value"]]
    return [reply.status_code, body]


def test_the_docs_store_handler_answers_as_the_reference(api: str) -> None:
    def call(who: str, method: str, path: str, **given: Any) -> list[Any]:
        headers = {"Authorization": f"Bearer {BEARERS[who]}"} if who in BEARERS else {}
        return shown(httpx.request(method, api + path, headers=headers, timeout=30, **given))

    def put(who: str, labels: list[str], value: dict[str, Any]) -> list[Any]:
        body = {"namespace": labels, "key": "k", "value": value}
        return call(who, "PUT", "/store/items", json=body)

    def get(who: str, labels: str) -> list[Any]:
        return call(who, "GET", "/store/items", params={"namespace": labels, "key": "k"})

    def search(who: str, body: dict[str, Any]) -> list[Any]:
        return call(who, "POST", "/store/items/search", json=body)

    def listed(who: str, body: dict[str, Any]) -> list[Any]:
        return call(who, "POST", "/store/namespaces", json=body)

    def delete(who: str, labels: list[str]) -> list[Any]:
        return call(who, "DELETE", "/store/items", json={"namespace": labels, "key": "k"})

    seen = [
        ("nobody puts", put("nobody", ["user1"], {"a": 1})),
        ("alice puts hers", put("alice", ["user1", "notes"], {"a": 1})),
        ("alice puts in bob's", put("alice", ["user2", "notes"], {"a": 2})),
        ("alice puts unprefixed", put("alice", ["notes"], {"a": 3})),
        ("bob puts his", put("bob", ["user2", "notes"], {"b": 1})),
        ("alice gets hers", get("alice", "user1.notes")),
        ("alice gets bob's", get("alice", "user2.notes")),
        ("alice searches hers", search("alice", {"namespace_prefix": ["user1"]})),
        ("alice searches bob's", search("alice", {"namespace_prefix": ["user2"]})),
        ("alice searches all", search("alice", {})),
        (
            "alice lists hers",
            listed("alice", {"prefix": ["user1"]}),
        ),
        ("alice lists all", listed("alice", {})),
        ("alice deletes bob's", delete("alice", ["user2", "notes"])),
        ("bob gets his", get("bob", "user2.notes")),
        ("alice deletes hers", delete("alice", ["user1", "notes"])),
        ("alice gets hers, deleted", get("alice", "user1.notes")),
    ]
    assert seen == [(what, DIFFERENT.get(what, said)) for what, said in REFERENCE]
