"""Cross-origin calls from a browser to the LangGraph server API, as the reference server
answers them: configured by ``langgraph.json``'s ``http.cors`` (the keys of Starlette's
``CORSMiddleware``, with its defaults), or, without one, any origin without credentials.
The operator's pages and their JSON API get no CORS headers: their cookie and CSRF rules
(:mod:`waystone.web.security`) stay the only way in."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from waystone.errors import BadInput
from waystone.web.replies import kind_of, route_path

# The reference's answer when ``http.cors`` is absent (langgraph_api/server.py).
DEFAULT: dict[str, Any] = {
    "allow_origins": ["*"],
    "allow_credentials": False,
    "allow_methods": ["*"],
    "allow_headers": ["*"],
    "expose_headers": ["x-pagination-total", "x-pagination-next", "content-location"],
}
LISTS = ("allow_origins", "allow_methods", "allow_headers", "expose_headers")
KEYS = {**dict.fromkeys(LISTS, list), "allow_credentials": bool}
KEYS |= {"allow_origin_regex": str, "max_age": int}
SHOWN = {list: "a list of strings", bool: "true or false", str: "a string", int: "a whole number"}


def check(config: object, where: str) -> dict[str, Any]:
    """``http.cors`` as the middleware's keyword arguments; :class:`BadInput` naming what
    is wrong with it."""
    if not isinstance(config, dict):
        raise BadInput(f"{where}: http.cors must be an object ({', '.join(KEYS)})")
    unknown = sorted(set(config) - set(KEYS))
    if unknown:
        raise BadInput(
            f"{where}: http.cors has no {', '.join(unknown)} (it takes {', '.join(KEYS)})"
        )
    for key, value in config.items():
        kind = KEYS[key]
        ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        if ok and kind is list:
            ok = all(isinstance(item, str) for item in value)
        if not ok:
            raise BadInput(f"{where}: http.cors.{key} must be {SHOWN[kind]}")
    return dict(config)


def from_file(path: Path | None) -> dict[str, Any]:
    """The CORS settings of the ``langgraph.json`` at ``path`` (none, or a file without
    ``http.cors``: the reference's default)."""
    if path is None or not path.is_file():
        return dict(DEFAULT)
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BadInput(f"{path}: cannot read it as JSON: {exc}") from exc
    http = config.get("http") if isinstance(config, dict) else None
    cors = http.get("cors") if isinstance(http, dict) else None
    return dict(DEFAULT) if cors is None else check(cors, str(path))


class Cors:
    """Starlette's ``CORSMiddleware`` with ``settings`` on the LangGraph API's routes
    only; every other request passes by it untouched."""

    def __init__(self, app: ASGIApp, settings: dict[str, Any]) -> None:
        self.app = app
        self.cors = CORSMiddleware(app, **settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and api_route(scope):
            await self.cors(scope, receive, send)
        else:
            await self.app(scope, receive, send)


def api_route(scope: Scope) -> bool:
    """Whether the request is for the LangGraph API (a preflight: by the method it asks
    for), not for a page or the operator's JSON API."""
    method = str(scope["method"])
    if method == "OPTIONS":
        method = Headers(scope=scope).get("access-control-request-method", "GET").upper()
    return kind_of(route_path(scope), method) == "langgraph"
