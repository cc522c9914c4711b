"""Custom auth: the ``langgraph_sdk.Auth`` object ``langgraph.json``'s ``auth.path``
names, applied as the reference server applies it. Its ``authenticate`` handler says who
each API request is (its parameters are given by name: ``request``, ``headers``,
``authorization``, ``path``, ``method``, ``query_params``, ``path_params``, ``scope``,
``scopes``, ``user``); its ``on`` handlers, the most specific first, see each action on
a resource with ``(ctx, value)``, may change ``value`` (a resource's metadata: what is
stored) and return a filter on the resource's metadata (:mod:`auth_filters`), or refuse.

A route asks with :func:`authorize`; a resource whose metadata does not pass the filter
is answered as if it did not exist (404), as the reference does.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import QueryParams
from starlette.requests import Request

from waystone._runtime.graphs import configured_auth
from waystone._runtime.options import AUTH_USER, AuthUser
from waystone.config import Settings
from waystone.errors import BadInput
from waystone.web.auth_filters import BadFilter, Filters, matches
from waystone.web.replies import HttpError

logger = logging.getLogger(__name__)

# What an authenticate handler may name, as the reference injects them.
PARAMETERS = frozenset(
    {"request", "headers", "authorization", "path", "method", "query_params"}
    | {"path_params", "scope", "scopes", "user"}
)


@dataclass(frozen=True)
class Caller:
    """Who a request is, as the authenticate handler said: ``user`` as the handlers get
    it (``ctx.user``), its permissions, and the user as a run keeps it (JSON)."""

    user: Any
    permissions: tuple[str, ...]
    kept: dict[str, Any]

    @property
    def identity(self) -> str:
        return str(self.kept["identity"])

    def configurable(self) -> dict[str, Any]:
        """The keys a run it creates gives its graph, as the reference's runs do."""
        return {
            AUTH_USER: self.kept,
            "langgraph_auth_user_id": self.identity,
            "langgraph_auth_permissions": list(self.permissions),
        }


class CustomAuth:
    """An ``Auth`` object's handlers, as the API applies them."""

    def __init__(self, auth: Any, source: str) -> None:
        from langgraph_sdk import Auth

        if not isinstance(auth, Auth):
            raise BadInput(
                f"{source}: auth.path names a {type(auth).__name__}, not a "
                "langgraph_sdk.Auth (auth = Auth() in the file it names)"
            )
        fn = auth._authenticate_handler
        if fn is None:
            raise BadInput(
                f"{source}: the Auth object has no @auth.authenticate handler; add one "
                "that returns the caller's identity"
            )
        self.auth = auth
        self.names = _parameters(fn, source)
        self._authenticate: Callable[..., Awaitable[Any]] = (
            fn if inspect.iscoroutinefunction(fn) else _in_thread(fn)
        )

    async def authenticate(self, request: Request) -> Caller:
        """Who ``request`` is; 401 or 403 as its handler raises (500 for any other error)."""
        from langgraph_sdk import Auth

        try:
            found = await self._authenticate(**_arguments(request, self.names))
        except Auth.exceptions.HTTPException as exc:
            if exc.status_code in (401, 403):
                raise HttpError(exc.status_code, str(exc.detail)) from None
            logger.error("the authenticate handler raised HTTP %s", exc.status_code)
            raise HttpError(500, "the authenticate handler failed") from None
        except Exception as exc:  # the user's code: whatever it raises is the server's fault
            logger.error("the authenticate handler raised %s", type(exc).__name__)
            raise HttpError(500, "the authenticate handler failed") from None
        return caller(found)

    async def handle(
        self, who: Caller, resource: str, action: str, value: dict[str, Any]
    ) -> Filters | None:
        """Run the most specific handler of ``(resource, action)`` on ``value`` (which it
        may change): its filter, or ``None``; :class:`HttpError` when it refuses."""
        from langgraph_sdk import Auth

        handler = self._handler(resource, action)
        if handler is None:
            return None
        # the reference's names of resources and actions, given as they are asked
        named: Any = (resource, action)
        ctx = Auth.types.AuthContext(
            user=who.user, permissions=list(who.permissions), resource=named[0], action=named[1]
        )
        try:
            if inspect.iscoroutinefunction(handler):
                result = await handler(ctx=ctx, value=value)
            else:
                result = await run_in_threadpool(handler, ctx=ctx, value=value)
        except Auth.exceptions.HTTPException as exc:
            raise HttpError(exc.status_code, str(exc.detail), exc.headers) from None
        except AssertionError as exc:
            raise HttpError(403, str(exc)) from None
        if result is None or result is True:
            return None
        if result is False:
            raise HttpError(403, "Forbidden")
        if not isinstance(result, dict):
            raise HttpError(
                500, f"the auth handler of {resource}.{action} returned a {type(result).__name__}"
            )
        return result

    def _handler(self, resource: str, action: str) -> Any:
        handlers: dict[tuple[str, str], list[Any]] = self.auth._handlers
        for key in ((resource, action), (resource, "*"), ("*", action), ("*", "*")):
            if key in handlers:
                return handlers[key][-1]  # the last one defined
        found: list[Any] = self.auth._global_handlers
        return found[-1] if found else None


def configured(settings: Settings) -> CustomAuth | None:
    """The custom auth the ``langgraph.json`` in use names, or ``None``. The owners'
    tokens name callers too: with both, :class:`BadInput` (one must say who calls)."""
    found = configured_auth(settings)
    if found is None:
        return None
    if settings.api_tokens or settings.api_tokens_file:
        raise BadInput(
            "langgraph.json names a custom auth (auth.path) and WAYSTONE_API_TOKENS or "
            "WAYSTONE_API_TOKENS_FILE names owners' tokens: its authenticate handler says "
            "who calls; unset the owners' tokens"
        )
    return CustomAuth(found, "langgraph.json's auth.path")


async def authorize(
    request: Request, resource: str, action: str, value: dict[str, Any]
) -> Filters | None:
    """The custom auth's answer to ``action`` on ``resource`` for this request's caller:
    a filter on the resource's metadata, or ``None`` (no custom auth, or no filter);
    :class:`HttpError` when it refuses. ``value`` is what the reference's handlers get for
    the action (``langgraph_sdk.Auth.types``); a handler may change it, and what it
    stores (its ``metadata``) is then taken from it."""
    auth: CustomAuth | None = getattr(request.state, "auth", None)
    if auth is None:
        return None
    return await auth.handle(request.state.caller, resource, action, value)


def passes(metadata: Mapping[str, Any], filters: Filters | None) -> bool:
    """Whether stored ``metadata`` passes ``filters`` (500 for a filter that means
    nothing)."""
    try:
        return matches(metadata, filters)
    except BadFilter as exc:
        raise HttpError(500, str(exc)) from None


def caller(found: Any) -> Caller:
    """The caller an authenticate handler returned: an identity, a dict with one (and
    ``permissions``), an object with an ``identity``, or a ``(permissions, user)`` pair."""
    permissions: Any = []
    user = found
    if isinstance(found, tuple) and len(found) == 2:
        permissions, user = found
    elif isinstance(found, Mapping) and "permissions" in found:
        permissions = found["permissions"]
    elif hasattr(found, "permissions") and not isinstance(found, str | Mapping):
        permissions = found.permissions
    if isinstance(user, str):
        user = {"identity": user}
    if isinstance(user, Mapping) and "identity" in user:
        kept = dict(user)
        user = None
    elif hasattr(user, "identity"):
        kept = _as_dict(user)
    else:
        raise HttpError(500, "the authenticate handler returned no identity")
    kept.setdefault("display_name", kept["identity"])
    kept.setdefault("is_authenticated", True)
    return Caller(user or AuthUser(kept), tuple(permissions or ()), kept)


def _as_dict(user: Any) -> dict[str, Any]:
    for method in ("model_dump", "dict"):
        dump = getattr(user, method, None)
        if callable(dump):
            found = dump()
            if isinstance(found, dict):
                return {"identity": user.identity, **found}
    return {"identity": user.identity}


def _parameters(fn: Callable[..., Any], source: str) -> frozenset[str]:
    names = inspect.signature(fn).parameters
    unknown = [
        n for n, p in names.items() if n not in PARAMETERS and p.default is inspect.Parameter.empty
    ]
    if unknown:
        raise BadInput(
            f"{source}: the authenticate handler asks for {', '.join(unknown)}; it may ask "
            f"for {', '.join(sorted(PARAMETERS))}"
        )
    return frozenset(n for n in names if n in PARAMETERS)


def _arguments(request: Request, names: frozenset[str]) -> dict[str, Any]:
    """The authenticate handler's arguments, by name, from ``request``."""
    scope = request.scope
    headers = dict(scope.get("headers", []))
    raw = headers.get(b"authorization")
    given: dict[str, Callable[[], Any]] = {
        "request": lambda: request,
        "headers": lambda: headers,
        "authorization": lambda: raw.decode() if raw is not None else None,
        "path": lambda: scope["path"],
        "method": lambda: request.method,
        "query_params": lambda: QueryParams(scope.get("query_string", b"")),
        "path_params": lambda: dict(request.path_params),
        "scope": lambda: scope,
        "scopes": lambda: [],
        "user": lambda: None,
    }
    return {name: given[name]() for name in names}


def _in_thread(fn: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    async def call(**kwargs: Any) -> Any:
        return await run_in_threadpool(fn, **kwargs)

    return call
