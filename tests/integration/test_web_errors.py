"""One error, one status, on every route: each of Waystone's error classes (and psycopg's),
raised where a run is read, answers the same status through the LangGraph API, the
operator's JSON API and a page, each in its own shape."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from starlette.testclient import TestClient

from waystone import Runtime
from waystone.errors import (
    BadInput,
    DatabaseUnavailable,
    LeaseLost,
    RunStopped,
    TransitionNotAllowed,
    UnknownThread,
    WaystoneError,
)
from waystone.web import api, create_app, pages

TOKEN = "t0ken-for-the-error-routes"
# What the issue names, and what the LangGraph API answered before: pinned.
PINNED: dict[type[BaseException], int] = {
    BadInput: 400,
    UnknownThread: 404,
    TransitionNotAllowed: 409,
    LeaseLost: 409,
    RunStopped: 409,
    DatabaseUnavailable: 503,
    psycopg.OperationalError: 503,
    psycopg.DataError: 400,
}


def error_classes() -> list[type[BaseException]]:
    """Every Waystone error class the app's modules load, and psycopg's."""
    assert api and pages  # loaded, and with them every error class a route can meet
    found: list[type[BaseException]] = []
    todo: list[type[BaseException]] = [WaystoneError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return [*found, psycopg.OperationalError, psycopg.DataError]


@pytest.fixture
def client(runtime: Runtime) -> Iterator[TestClient]:
    app = create_app(runtime, token=TOKEN)
    with TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield client


@pytest.mark.parametrize("cls", error_classes(), ids=lambda c: c.__name__)
def test_an_error_answers_the_same_status_on_every_route(
    runtime: Runtime,
    client: TestClient,
    monkeypatch: pytest.MonkeyPatch,
    cls: type[BaseException],
) -> None:
    thread_id = "t-1"

    def fails(*args: object, **kwargs: object) -> None:
        raise cls(thread_id)

    monkeypatch.setattr(runtime, "status", fails)
    api = client.get(f"/threads/{thread_id}/runs/r-1")
    operator = client.get(f"/api/runs/{thread_id}")
    page = client.get(f"/runs/{thread_id}")
    assert api.status_code == operator.status_code == page.status_code, (api, operator, page)
    assert api.status_code == PINNED.get(cls, api.status_code) and api.status_code >= 400
    assert thread_id in api.json()["detail"] and thread_id in operator.json()["error"]
    assert page.headers["content-type"].startswith("text/html")


def test_an_unforeseen_error_is_500_with_the_headers_of_every_answer(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fails(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug that holds ana@example.com")

    monkeypatch.setattr(runtime, "status", fails)
    app = create_app(runtime, token=TOKEN)
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    # Starlette re-raises such an error after the answer, for the server to log it
    with TestClient(app, headers=bearer, raise_server_exceptions=False) as client:
        answers = [client.get(p) for p in ("/threads/t-1/runs/r-1", "/api/runs/t-1", "/runs/t-1")]
    for answer in answers:
        assert answer.status_code == 500, answer.text
        assert "internal error: RuntimeError" in answer.text and "ana@" not in answer.text
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["cache-control"] == "no-store"
    assert "frame-ancestors 'none'" in answers[2].headers["content-security-policy"]
