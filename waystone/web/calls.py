"""The operator's routes as plain functions of a :class:`Call`: the wrapper reads the
request (its body in full, once the guard has bounded it), checks the reader, runs the
function on a worker thread (it reads Postgres) and turns what it raises into an answer
of the route's kind."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from waystone._json_input import parse_json_input
from waystone.errors import BadInput, WaystoneError
from waystone.runtime import Runtime
from waystone.web.gate import Gate
from waystone.web.replies import HttpError, Kind, error_reply, http_status, meaning

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Site:
    """What every operator route shares: the runtime and the gate."""

    rt: Runtime
    gate: Gate


@dataclass(frozen=True)
class Call:
    site: Site
    request: Request
    body: bytes = b""
    params: dict[str, str] = field(default_factory=dict)

    @property
    def rt(self) -> Runtime:
        return self.site.rt

    @property
    def gate(self) -> Gate:
        return self.site.gate

    @property
    def root(self) -> str:
        """The prefix the app is mounted at ("" at the root): the pages' links start with it."""
        return str(self.request.scope.get("root_path", ""))

    def query(self, name: str, default: str | None = None) -> str | None:
        values = self.request.query_params.getlist(name)
        return values[-1] if values else default

    def session(self) -> str | None:
        return self.gate.session(self.request.cookies)

    def authenticated(self) -> bool:
        return self.gate.authenticated(self.request.headers, self.request.cookies)

    def require_bearer(self) -> None:
        self.gate.require_bearer(self.request.headers)

    def require_session(self, form: Mapping[str, str]) -> str:
        return self.gate.require_session(self.request.headers, self.request.cookies, form)


Action = Callable[[Call], Response]


def route(
    site: Site, method: str, path: str, kind: Kind, action: Action, *, anonymous: bool = False
) -> Route:
    """A route that runs ``action``; a GET needs a reader unless ``anonymous``."""

    async def endpoint(request: Request) -> Response:
        try:
            body = b"" if method == "GET" else await request.body()
        except ClientDisconnect:
            return Response(status_code=400)  # nobody is there to read it
        call = Call(site, request, body, dict(request.path_params))
        return await run_in_threadpool(
            _answer, call, kind, action, method == "GET" and not anonymous
        )

    return Route(path, endpoint, methods=[method], name=f"{method} {path}")


def _answer(call: Call, kind: Kind, action: Action, reads: bool) -> Response:
    request = call.request
    try:
        if reads:
            call.gate.require_reader(request.headers, request.cookies)
        return action(call)
    except HttpError as exc:
        return error_reply(kind, exc.status, exc.message, exc.headers, call.root)
    except WaystoneError as exc:
        status = http_status(exc)
        if status >= 500:
            logger.error("%s %s: %s", request.method, request.url.path, exc)
        return error_reply(kind, status, str(exc), root=call.root)
    except Exception as exc:
        known = meaning(exc)
        if known is None:
            logger.exception("%s %s failed", request.method, request.url.path)
            return error_reply(kind, 500, f"internal error: {type(exc).__name__}", root=call.root)
        return error_reply(kind, http_status(known), str(known), root=call.root)


# -- request bodies ----------------------------------------------------------------------


def json_object(body: bytes, what: str, *, empty_ok: bool = False) -> dict[str, Any]:
    if not body.strip() and empty_ok:
        return {}
    data = parse_json_input(body, what)
    if not isinstance(data, dict):
        raise BadInput(f"{what} must be a JSON object")
    return data


def text_field(data: Mapping[str, Any], name: str, *, required: bool) -> str | None:
    value = data.get(name)
    if value is None:
        if required:
            raise BadInput(f"{name!r} is required")
        return None
    if not isinstance(value, str):
        raise BadInput(f"{name!r} must be a string")
    value = value.strip()
    if required and not value:
        raise BadInput(f"{name!r} must not be empty")
    return value


def form_fields(body: bytes) -> dict[str, str]:
    """An url-encoded form's fields (the last value of each)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"the form is not UTF-8: {exc}") from exc
    return {k: v[-1] for k, v in parse_qs(text, keep_blank_values=True).items()}
