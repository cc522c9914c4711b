"""Waystone on ASGI: :func:`create_app` gives the LangGraph server API over a runtime, to
serve with uvicorn (``waystone api``) or to mount in an application of your own."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from waystone.runtime import Runtime


def create_app(runtime: Runtime, *, token: str | None = None) -> Starlette:
    """The ASGI app of the LangGraph server API on ``runtime``. ``token`` (by default
    ``WAYSTONE_API_TOKEN``) is the operator's token, and owners' tokens are read from
    ``WAYSTONE_API_TOKENS_FILE`` or ``WAYSTONE_API_TOKENS`` (:mod:`waystone.web.owners`):
    with any of them set, every request needs one; without, the API only reads. The
    runtime stays the caller's to close."""
    from starlette.applications import Starlette

    from waystone.web import owners
    from waystone.web.api import Api

    operator = token if token is not None else os.environ.get("WAYSTONE_API_TOKEN") or None
    api = Api(runtime, owners.from_env(os.environ, operator))
    return Starlette(routes=api.routes())
