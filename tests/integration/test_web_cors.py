"""A browser on another origin calls the LangGraph API as it calls ``langgraph dev``: a
preflight answered, the API's answers readable (``Content-Location`` too); with
``langgraph.json``'s ``http.cors``, only what it allows. The operator's pages and their
JSON API answer no cross-origin call, and a form posted from another origin is still
refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from waystone import Runtime, Settings
from waystone.web import create_app

TOKEN = "t0ken-for-the-cors-routes"
OTHER = "http://chat.example:3000"
PREFLIGHT = {
    "Origin": OTHER,
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "content-type,x-api-key",
}


@pytest.fixture
def client(runtime: Runtime) -> Iterator[TestClient]:
    with TestClient(create_app(runtime, token=TOKEN)) as client:
        yield client


def test_any_origin_by_default_as_the_reference(client: TestClient) -> None:
    asked = client.options("/threads/search", headers=PREFLIGHT)
    assert asked.status_code == 200
    assert asked.headers["access-control-allow-origin"] == "*"
    assert "POST" in asked.headers["access-control-allow-methods"]
    assert "x-api-key" in asked.headers["access-control-allow-headers"]
    assert "access-control-allow-credentials" not in asked.headers

    made = client.post("/threads", json={}, headers={"Origin": OTHER, "x-api-key": TOKEN})
    assert made.status_code == 200
    assert made.headers["access-control-allow-origin"] == "*"
    assert "content-location" in made.headers["access-control-expose-headers"]
    refused = client.post("/threads", json={}, headers={"Origin": OTHER})  # no token
    assert refused.status_code == 401  # refused, and the browser may read why
    assert refused.headers["access-control-allow-origin"] == "*"


def test_the_pages_answer_no_cross_origin_call(client: TestClient) -> None:
    for path in ("/login", "/runs/t-1/approve", "/api/runs"):
        asked = client.options(path, headers=PREFLIGHT)
        assert "access-control-allow-origin" not in asked.headers, path
    logged_in = client.post(
        "/login",
        data={"token": TOKEN},
        headers={"Origin": "http://testserver"},
        follow_redirects=False,
    )
    assert logged_in.status_code == 303 and client.cookies  # the operator's session
    forged = client.post(
        "/runs/t-1/approve",
        data={"by": "ana"},
        headers={"Origin": OTHER},
        follow_redirects=False,
    )
    assert forged.status_code == 403
    assert "access-control-allow-origin" not in forged.headers


def test_http_cors_of_langgraph_json(database_url: str, tmp_path: Path) -> None:
    allowed = "https://app.example"
    config = {
        "graphs": {},
        "http": {
            "cors": {
                "allow_origins": [allowed],
                "allow_methods": ["GET", "POST"],
                "allow_headers": ["x-api-key", "content-type"],
                "allow_credentials": True,
                "expose_headers": ["content-location"],
            }
        },
    }
    path = tmp_path / "langgraph.json"
    path.write_text(json.dumps(config))
    settings = Settings(database_url=database_url, langgraph_json=path)
    with Runtime(settings) as rt, TestClient(create_app(rt, token=TOKEN)) as client:
        ok = client.options("/threads", headers={**PREFLIGHT, "Origin": allowed})
        assert ok.status_code == 200
        assert ok.headers["access-control-allow-origin"] == allowed
        assert ok.headers["access-control-allow-credentials"] == "true"
        other = client.options("/threads", headers=PREFLIGHT)
        assert other.status_code == 400  # Starlette's answer to an origin not allowed
        assert "access-control-allow-origin" not in other.headers
        deleting = client.options(
            "/threads/t-1",
            headers={**PREFLIGHT, "Origin": allowed, "Access-Control-Request-Method": "DELETE"},
        )
        assert deleting.status_code == 400
