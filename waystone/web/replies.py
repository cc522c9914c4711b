"""What every route answers when something is refused or fails: one HTTP status for each
Waystone error (and for psycopg's), and the error itself as JSON (``{"error": ...}`` under
``/api/`` and ``/signals/``; ``{"detail": ...}`` for the LangGraph server API) or as a
page. :data:`HANDLERS` is registered once with the app's ``exception_handlers``."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any, Literal

import psycopg
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from waystone._db.database import translate
from waystone.errors import (
    BadInput,
    DatabaseUnavailable,
    LeaseLost,
    RunStopped,
    TransitionNotAllowed,
    UnknownThread,
    WaystoneError,
    chain,
)
from waystone.web.render import COMMON_HEADERS, PAGE_HEADERS, error_page

logger = logging.getLogger(__name__)

Kind = Literal["api", "html", "langgraph"]

OPERATOR_PREFIXES = ("/api/", "/signals/")
# The pages: the dashboard, a run's page and its forms, the login and logout forms. The
# LangGraph API has paths under /runs/ too (/runs/wait, /runs/crons/...): matched apart.
PAGE_READS = re.compile(r"/|/login|/runs/[^/]+")
PAGE_FORMS = re.compile(r"/login|/logout|/runs/[^/]+/(approve|reject|resume)")

# A lease lost, a run stopped and a refused transition are conflicts with the run's state
# as it is now; a retryable error not listed (a database outage) is 503.
STATUSES: Mapping[type[WaystoneError], int] = {
    BadInput: 400,
    UnknownThread: 404,
    TransitionNotAllowed: 409,
    LeaseLost: 409,
    RunStopped: 409,
    DatabaseUnavailable: 503,
}


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
    """The HTTP status a Waystone error answers, the same on every route."""
    for cls in type(exc).__mro__:
        if cls in STATUSES:
            return STATUSES[cls]
    return 503 if exc.retryable else 500


def meaning(exc: BaseException) -> WaystoneError | None:
    """The Waystone error behind an exception (a database error among them), if any."""
    for link in chain(exc):
        if isinstance(link, WaystoneError):
            return link
        if isinstance(link, psycopg.DatabaseError):
            translated = translate(link)  # a fencing or transition refusal by Postgres
            if isinstance(translated, LeaseLost | TransitionNotAllowed):
                return translated
        if isinstance(link, psycopg.OperationalError):
            return DatabaseUnavailable(f"Postgres is unreachable: {link}")
        if isinstance(link, psycopg.DataError):
            return BadInput(f"the input cannot be stored: {link}")
    return None


def answer(exc: BaseException) -> tuple[int, str, dict[str, str]]:
    """The status, message and headers ``exc`` answers (an unknown error: 500)."""
    if isinstance(exc, HttpError):
        return exc.status, exc.message, exc.headers
    if isinstance(exc, HTTPException):
        return exc.status_code, exc.detail, dict(exc.headers or {})
    known = meaning(exc)
    if known is None:
        return 500, f"internal error: {type(exc).__name__}", {}
    return http_status(known), str(known), {}


async def reply_to(request: Request, exc: BaseException) -> Response:
    """The app's one exception handler: ``exc`` answered in the route's kind."""
    status, message, headers = answer(exc)
    path = route_path(request.scope)
    if isinstance(exc, HTTPException) and status == 404:  # no route
        message = f"no such page or endpoint: {path}"
    elif isinstance(exc, HTTPException) and status == 405:
        message = f"{request.method} is not allowed here"
    if status >= 500 and not isinstance(exc, HttpError):  # an HttpError is a deliberate answer
        logger.error("%s %s: %s", request.method, path, message)
    root = str(request.scope.get("root_path", ""))
    return error_reply(kind_of(path, request.method), status, message, headers, root)


# Exception's handler answers any other error too, and Starlette then re-raises it for the
# server to log: an error of no known meaning is a bug to see.
HANDLERS: Mapping[Any, Any] = {
    cls: reply_to for cls in (HttpError, HTTPException, WaystoneError, psycopg.Error, Exception)
}


def error_reply(
    kind: Kind,
    status: int,
    message: str,
    headers: Mapping[str, str] | None = None,
    root: str = "",
) -> Response:
    # an error a route did not foresee is answered outside the guard: its headers too
    sent = {**COMMON_HEADERS, **(PAGE_HEADERS if kind == "html" else {}), **(headers or {})}
    if kind == "api":
        return JSONResponse({"error": message}, status, sent)
    if kind == "langgraph":
        return JSONResponse({"detail": message}, status, sent)
    return error_page(status, message, sent, root)
