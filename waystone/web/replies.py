"""What the operator's routes answer when something is refused: an HTTP status for each
Waystone error, and the error itself as JSON (``{"error": ...}`` under ``/api/`` and
``/signals/``; ``{"detail": ...}`` for the LangGraph server API) or as a page."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from starlette.responses import JSONResponse, Response

from waystone.errors import BadInput, DatabaseUnavailable, WaystoneError, chain

Kind = Literal["api", "html", "langgraph"]

OPERATOR_PREFIXES = ("/api/", "/signals/")
# The pages: the dashboard, a run's page and its forms, the login and logout forms.
PAGE_PREFIXES = ("/runs/", "/login", "/logout")


class HttpError(Exception):
    """A request refused, with its HTTP status and a message for the caller."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})


def route_path(scope: Mapping[str, object]) -> str:
    """The request's path within the app (without the prefix it is mounted at)."""
    path, root = str(scope.get("path", "")), str(scope.get("root_path", ""))
    return path[len(root) :] if root and path.startswith(root) else path


def kind_of(path: str, method: str = "GET") -> Kind:
    """Who is asking, by the path: the operator's JSON API, a page, or the LangGraph API
    (whose ``/runs/wait`` and ``/runs/stream`` are the only POSTs under ``/runs/`` with
    one segment)."""
    if path.startswith(OPERATOR_PREFIXES):
        return "api"
    if path == "/" or path.startswith(PAGE_PREFIXES):
        if method == "POST" and path in ("/runs/wait", "/runs/stream"):
            return "langgraph"
        return "html"
    return "langgraph"


def http_status(exc: WaystoneError) -> int:
    """The HTTP status a Waystone error maps to (by its CLI exit code)."""
    if isinstance(exc, DatabaseUnavailable):
        return 503
    return {2: 400, 3: 404, 4: 409, 6: 503}.get(exc.exit_code, 500)


def meaning(exc: BaseException) -> WaystoneError | None:
    """The Waystone error behind a database exception, if any (as the CLI maps them)."""
    import psycopg

    for link in chain(exc):
        if isinstance(link, WaystoneError):
            return link
        if isinstance(link, psycopg.OperationalError):
            return DatabaseUnavailable(f"Postgres is unreachable: {link}")
        if isinstance(link, psycopg.DataError):
            return BadInput(f"the input cannot be stored: {link}")
    return None


def error_reply(
    kind: Kind,
    status: int,
    message: str,
    headers: Mapping[str, str] | None = None,
    root: str = "",
) -> Response:
    if kind == "api":
        return JSONResponse({"error": message}, status, dict(headers or {}))
    if kind == "langgraph":
        return JSONResponse({"detail": message}, status, dict(headers or {}))
    from waystone.web.render import error_page

    return error_page(status, message, headers, root)
