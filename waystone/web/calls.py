"""The operator's routes as plain functions of a :class:`Call`: the wrapper reads the
request (its body in full, once the guard has bounded it), checks the reader and runs the
function on a worker thread (it reads Postgres)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from waystone.runtime import Runtime
from waystone.web.gate import Gate


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


def route(site: Site, method: str, path: str, action: Action, *, anonymous: bool = False) -> Route:
    """A route that runs ``action``; a GET needs a reader unless ``anonymous``. What it
    raises is answered by the app's handler (:mod:`waystone.web.replies`)."""

    async def endpoint(request: Request) -> Response:
        try:
            body = b"" if method == "GET" else await request.body()
        except ClientDisconnect:
            return Response(status_code=400)  # nobody is there to read it
        call = Call(site, request, body, dict(request.path_params))
        return await run_in_threadpool(_answer, call, action, method == "GET" and not anonymous)

    return Route(path, endpoint, methods=[method], name=f"{method} {path}")


def _answer(call: Call, action: Action, reads: bool) -> Response:
    if reads:
        call.gate.require_reader(call.request.headers, call.request.cookies)
    return action(call)
