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
    ``WAYSTONE_API_TOKEN``) is what a client must send to change anything, and to read
    when set; the runtime stays the caller's to close."""
    from starlette.applications import Starlette

    from waystone.web.api import Api

    api = Api(runtime, token if token is not None else os.environ.get("WAYSTONE_API_TOKEN"))
    return Starlette(routes=api.routes())
