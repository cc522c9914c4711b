"""What the operator's routes answer when something is refused: an HTTP status for each
Waystone error, and the error itself as JSON (``{"error": ...}`` under ``/api/`` and
``/signals/``; ``{"detail": ...}`` for the LangGraph server API) or as a page."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from starlette.responses import JSONResponse, Response

from waystone.errors import BadInput, DatabaseUnavailable, WaystoneError, chain

Kind = Literal["api", "html", "langgraph"]

OPERATOR_PREFIXES = ("/api/", "/signals/")
# The pages: the dashboard, a run's page and its forms, the login and logout forms. The
# LangGraph API has paths under /runs/ too (/runs/wait, /runs/crons/...): matched apart.
PAGE_READS = re.compile(r"/|/login|/runs/[^/]+")
PAGE_FORMS = re.compile(r"/login|/logout|/runs/[^/]+/(approve|reject|resume)")


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
    """Who is asking, by the path within the app: the operator's JSON API, a page or a
    form of the pages, or the LangGraph API (everything else)."""
    if path.startswith(OPERATOR_PREFIXES):
        return "api"
    pages = PAGE_FORMS if method == "POST" else PAGE_READS
    return "html" if pages.fullmatch(path) else "langgraph"


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
