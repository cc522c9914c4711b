"""A custom auth whose identities are emails, through the app on a real runtime: a
thread's metadata is stored with the email tokenised, and the handler's filter (the same
email) still finds the owner's threads and hides them from anyone else."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from langgraph_sdk import Auth
from starlette.applications import Starlette
from starlette.testclient import TestClient

from waystone import Runtime
from waystone.web.api import Api
from waystone.web.auth import CustomAuth
from waystone.web.replies import HANDLERS

ANA, BO = "ana@example.com", "bo@example.com"


def emails() -> Auth:
    auth = Auth()

    @auth.authenticate
    async def who(authorization: str | None) -> str:
        if authorization not in (f"Bearer {ANA}", f"Bearer {BO}"):
            raise Auth.exceptions.HTTPException(status_code=401, detail="who?")
        return authorization.removeprefix("Bearer ")

    @auth.on
    async def owned(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> dict[str, Any]:
        value.setdefault("metadata", {})["owner"] = ctx.user.identity
        return {"owner": ctx.user.identity}

    return auth


@pytest.fixture
def app(runtime: Runtime) -> Iterator[TestClient]:
    api = Api(runtime, None, CustomAuth(emails(), "test"))
    with TestClient(Starlette(routes=api.routes(), exception_handlers=HANDLERS)) as client:
        yield client


def test_an_email_identity_is_stored_tokenised_and_still_filters(
    app: TestClient, sql: psycopg.Connection[Any]
) -> None:
    ana, bo = ({"Authorization": f"Bearer {who}"} for who in (ANA, BO))
    made = app.post("/threads", json={"metadata": {"team": "a"}}, headers=ana)
    assert made.status_code == 200, made.text
    thread = made.json()["thread_id"]
    stored = sql.execute(
        "SELECT metadata::text FROM waystone.threads WHERE thread_id = %s", (thread,)
    ).fetchone()
    assert stored is not None and ANA not in stored[0] and "<pii:" in stored[0]
    assert app.get(f"/threads/{thread}", headers=ana).status_code == 200
    found = app.post("/threads/search", json={}, headers=ana).json()
    assert [t["thread_id"] for t in found] == [thread]
    assert app.get(f"/threads/{thread}", headers=bo).status_code == 404
    assert app.post("/threads/search", json={}, headers=bo).json() == []
    assert app.get(f"/threads/{thread}", headers={"Authorization": "Bearer x"}).status_code == 401
