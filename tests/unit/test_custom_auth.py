"""A langgraph_sdk.Auth object as Waystone's API applies it: the caller its authenticate
handler returns, its parameters given by name, the handler each action runs and what
its refusals answer; and what a langgraph.json's auth.path may name."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import Auth
from starlette.requests import Request

from waystone._runtime.options import AuthUser, RunOptions
from waystone.config import Settings
from waystone.errors import BadInput
from waystone.web import run_options
from waystone.web.auth import CustomAuth, caller, configured
from waystone.web.bodies import RunCreate
from waystone.web.replies import HttpError


def request(headers: dict[str, str], path: str = "/threads/search") -> Request:
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    scope = {"type": "http", "method": "POST", "path": path, "headers": raw}
    return Request({**scope, "query_string": b"limit=2", "path_params": {}})


@pytest.mark.parametrize(
    ("found", "identity", "permissions"),
    [
        ("ana", "ana", ()),
        ({"identity": "ana", "permissions": ["read"]}, "ana", ("read",)),
        ((["write"], "ana"), "ana", ("write",)),
        ((["write"], {"identity": "ana", "tier": 2}), "ana", ("write",)),
    ],
)
def test_the_caller_of_each_answer(found: Any, identity: str, permissions: tuple[str]) -> None:
    who = caller(found)
    assert (who.identity, who.permissions) == (identity, permissions)
    assert who.user.identity == identity and who.user["display_name"] == identity
    json.dumps(who.kept)  # kept with a run, as JSON


def test_an_answer_without_identity_is_the_servers_error() -> None:
    with pytest.raises(HttpError) as refused:
        caller({"name": "ana"})
    assert refused.value.status == 500


def test_a_run_gives_its_graph_the_caller_with_attributes() -> None:
    who = caller({"identity": "ana", "display_name": "Ana"})
    configurable: dict[str, Any] = {}
    RunOptions(configurable=who.configurable()).apply(configurable)
    user = configurable["langgraph_auth_user"]
    assert isinstance(user, AuthUser) and user.identity == "ana" and user["display_name"] == "Ana"
    assert configurable["langgraph_auth_user_id"] == "ana"
    with pytest.raises(AttributeError):
        user.missing  # noqa: B018


def example() -> Auth:
    auth = Auth()

    @auth.authenticate
    async def who(authorization: str | None, path: str, method: str, query_params: Any) -> str:
        if authorization != "Bearer good":
            raise Auth.exceptions.HTTPException(status_code=401, detail="no")
        return f"{method} {path} {query_params['limit']}"

    @auth.on
    async def anything(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> dict[str, Any]:
        return {"everything": ctx.resource}

    @auth.on.threads
    async def threads(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> bool:
        return False

    @auth.on.threads.create
    async def create(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> dict[str, str]:
        value.setdefault("metadata", {})["owner"] = ctx.user.identity
        return {"owner": ctx.user.identity}

    @auth.on.crons.delete
    async def delete(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> None:
        assert ctx.permissions, "no permissions"

    @auth.on.assistants.create
    async def assistants(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> None:
        raise Auth.exceptions.HTTPException(status_code=418, detail="a teapot")

    return auth


def test_authenticate_gets_its_parameters_by_name() -> None:
    auth = CustomAuth(example(), "test")
    who = asyncio.run(auth.authenticate(request({"Authorization": "Bearer good"})))
    assert who.identity == "POST /threads/search 2"
    with pytest.raises(HttpError) as refused:
        asyncio.run(auth.authenticate(request({"Authorization": "Bearer bad"})))
    assert (refused.value.status, refused.value.message) == (401, "no")


def test_the_most_specific_handler_answers() -> None:
    auth, ana = CustomAuth(example(), "test"), caller("ana")

    def handle(resource: str, action: str, value: dict[str, Any]) -> Any:
        try:
            return asyncio.run(auth.handle(ana, resource, action, value))
        except HttpError as exc:
            return exc.status, exc.message

    made: dict[str, Any] = {"thread_id": None}
    assert handle("threads", "create", made) == {"owner": "ana"}
    assert made["metadata"] == {"owner": "ana"}  # what the thread is stored with
    assert handle("threads", "read", {}) == (403, "Forbidden")
    assert handle("crons", "read", {}) == {"everything": "crons"}
    status, message = handle("crons", "delete", {})  # an assert's message (pytest adds to it)
    assert status == 403 and message.startswith("no permissions")
    assert handle("assistants", "create", {}) == (418, "a teapot")


def test_an_auth_object_needs_an_authenticate_handler() -> None:
    with pytest.raises(BadInput, match="no @auth.authenticate"):
        CustomAuth(Auth(), "test")
    with pytest.raises(BadInput, match="not a langgraph_sdk.Auth"):
        CustomAuth(object(), "test")
    asks = Auth()

    @asks.authenticate
    async def odd(cookie: str) -> str:
        return cookie

    with pytest.raises(BadInput, match="asks for cookie"):
        CustomAuth(asks, "test")


def write(tmp_path: Path, auth: object) -> Settings:
    (tmp_path / "auth.py").write_text(
        "from langgraph_sdk import Auth\nauth = Auth()\n\n"
        "@auth.authenticate\nasync def who(authorization: str | None) -> str:\n"
        "    return 'ana'\n"
    )
    config = tmp_path / "langgraph.json"
    config.write_text(json.dumps({"graphs": {}, "auth": auth}))
    return Settings(langgraph_json=config)


def test_langgraph_json_names_the_auth(tmp_path: Path) -> None:
    found = configured(write(tmp_path, {"path": "./auth.py:auth"}))
    assert isinstance(found, CustomAuth)
    assert configured(write(tmp_path, {"disable_studio_auth": True})) is None
    with pytest.raises(BadInput, match='"auth" needs "path"'):
        configured(write(tmp_path, {"path": "auth.py"}))


def test_owners_tokens_and_a_custom_auth_do_not_go_together(tmp_path: Path) -> None:
    settings = write(tmp_path, {"path": "./auth.py:auth"})
    with pytest.raises(BadInput, match="unset the owners' tokens"):
        configured(Settings(langgraph_json=settings.langgraph_json, api_tokens="bo=t"))


def test_a_request_cannot_say_who_called() -> None:
    spoofed = {"configurable": {"langgraph_auth_user_id": "root"}}
    with pytest.raises(run_options.Unsupported, match="langgraph_auth_user_id is the server's"):
        run_options.from_body(RunCreate(assistant_id="agent", config=spoofed))
