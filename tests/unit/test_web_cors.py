"""Which requests get CORS headers (the LangGraph API's, not the pages' nor the
operator's JSON API), and ``langgraph.json``'s ``http.cors`` read as the reference reads
it: the middleware's keyword arguments, the reference's default when absent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from waystone.errors import BadInput
from waystone.web import cors


def scope(method: str, path: str, asks: str | None = None) -> dict[str, Any]:
    headers = [] if asks is None else [(b"access-control-request-method", asks.encode())]
    return {"type": "http", "method": method, "path": path, "headers": headers}


@pytest.mark.parametrize(
    ("method", "path", "asks", "api"),
    [
        ("POST", "/threads/search", None, True),
        ("GET", "/threads/t-1/runs/r-1/stream", None, True),
        ("OPTIONS", "/threads", "POST", True),
        ("OPTIONS", "/runs/wait", "POST", True),  # the API's, though under /runs/
        ("POST", "/runs/stream", None, True),
        ("GET", "/", None, False),  # the dashboard
        ("OPTIONS", "/runs/t-1", "GET", False),  # a run's page
        ("POST", "/runs/t-1/approve", None, False),  # a page's form
        ("OPTIONS", "/login", "POST", False),
        ("POST", "/api/runs/t-1/cancel", None, False),  # the operator's JSON API
        ("POST", "/signals/t-1", None, False),
    ],
)
def test_only_the_langgraph_api_is_cross_origin(
    method: str, path: str, asks: str | None, api: bool
) -> None:
    assert cors.api_route(scope(method, path, asks)) is api


def write(tmp_path: Path, config: dict[str, Any]) -> Path:
    path = tmp_path / "langgraph.json"
    path.write_text(json.dumps({"graphs": {}, **config}))
    return path


def test_the_reference_s_default_without_http_cors(tmp_path: Path) -> None:
    assert cors.from_file(None) == cors.DEFAULT
    assert cors.from_file(tmp_path / "absent.json") == cors.DEFAULT
    assert cors.from_file(write(tmp_path, {"http": {"mount_prefix": "/x"}})) == cors.DEFAULT
    assert cors.DEFAULT["allow_origins"] == ["*"] and not cors.DEFAULT["allow_credentials"]
    assert "content-location" in cors.DEFAULT["expose_headers"]


def test_http_cors_is_taken_as_given(tmp_path: Path) -> None:
    given = {
        "allow_origins": ["https://app.example"],
        "allow_methods": ["GET", "POST"],
        "allow_headers": ["x-api-key", "content-type"],
        "allow_credentials": True,
        "expose_headers": ["content-location", "location"],
        "max_age": 60,
    }
    assert cors.from_file(write(tmp_path, {"http": {"cors": given}})) == given


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("*", "must be an object"),
        ({"allow_origin": ["x"]}, "http.cors has no allow_origin"),
        ({"allow_origins": "https://app.example"}, "allow_origins must be a list of strings"),
        ({"allow_credentials": "yes"}, "allow_credentials must be true or false"),
        ({"max_age": True}, "max_age must be a whole number"),
    ],
)
def test_a_wrong_http_cors_says_what_is_wrong(tmp_path: Path, given: Any, said: str) -> None:
    with pytest.raises(BadInput, match=said):
        cors.from_file(write(tmp_path, {"http": {"cors": given}}))
