"""Waystone on ASGI: :func:`create_app` gives one Starlette app over a runtime, to serve
with uvicorn (``waystone serve``, :func:`waystone.web.serve.serve`) or to mount in an
application of your own. It holds the LangGraph server API (:mod:`waystone.web.api`),
the operator's pages (:mod:`waystone.web.pages`), their JSON API and the providers'
webhook (:mod:`waystone.web.operator`)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from waystone.runtime import Runtime


def create_app(
    runtime: Runtime,
    *,
    token: str | None = None,
    allowed_hosts: Iterable[str] | None = None,
    public_reads: bool = False,
    max_body: int | None = None,
) -> Starlette:
    """The ASGI app on ``runtime`` (which stays the caller's to close).

    The defaults are the runtime's settings (``runtime.settings``, which the caller read).
    ``token`` (by default ``WAYSTONE_API_TOKEN``): the operator's token, what a client
    must send to change anything, and to read while it is set; owners' tokens are read
    from ``WAYSTONE_API_TOKENS_FILE`` or ``WAYSTONE_API_TOKENS`` (:mod:`waystone.web.owners`)
    and see their own threads only. Without any, the app only reads. A custom auth
    (``langgraph.json``'s ``auth.path``, :mod:`waystone.web.auth`) replaces the tokens on
    the LangGraph API; the operator's token still guards the pages and ``/api/``.
    ``allowed_hosts``: the ``NAME`` or ``NAME:PORT`` values of the Host header it answers
    (None: any, when what serves it checks them). ``public_reads``: anyone reads the
    pages and ``/api/`` though a token is set. ``max_body``: the largest request body in
    bytes (by default ``WAYSTONE_MAX_BODY_BYTES``, or 1 MiB); a larger one gets 413.
    Cross-origin calls to the LangGraph API are answered as ``langgraph.json``'s
    ``http.cors`` says (:mod:`waystone.web.cors`).
    """
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.routing import Route

    from waystone.errors import BadInput
    from waystone.web import assistants, auth, cors, crons, operator, owners, pages, thread_edits
    from waystone.web import store as store_api
    from waystone.web.api import Api
    from waystone.web.calls import Site
    from waystone.web.gate import Gate
    from waystone.web.guard import Guard
    from waystone.web.mcp import PATH, Mcp
    from waystone.web.protocol import Protocol
    from waystone.web.replies import HANDLERS
    from waystone.web.security import SessionStore, parse_allowed_hosts

    settings = runtime.settings
    if token is None:
        token = settings.api_token or None
    try:
        hosts = None if allowed_hosts is None else frozenset(parse_allowed_hosts(allowed_hosts))
    except ValueError as exc:
        raise BadInput(f"--allowed-hosts: {exc}") from exc
    limit = settings.max_body_bytes if max_body is None else max_body
    crossing = cors.from_file(settings.langgraph_json or Path("langgraph.json"))
    site = Site(runtime, Gate(token or None, public_reads, SessionStore(runtime.connection)))

    api = Api(runtime, owners.from_settings(settings, token or None), auth.configured(settings))
    mcp = Mcp(api)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp.running():
            yield
        await api.follower.close()  # its task would outlive the loop otherwise

    return Starlette(
        routes=[
            *api.routes(),
            Route(PATH, mcp),
            *assistants.routes(api),
            *crons.routes(api),
            *thread_edits.routes(api, api.changes, api.reads),
            *Protocol(api).routes(),
            *store_api.routes(api),
            *operator.routes(site),
            *pages.routes(site),
        ],
        middleware=[
            Middleware(Guard, hosts=hosts, max_body=limit),
            Middleware(cors.Cors, settings=crossing),
        ],
        exception_handlers=HANDLERS,
        lifespan=lifespan,
    )
