"""``create_app`` mounted under a prefix of an application of one's own, served by
uvicorn on loopback: the pages link, redirect and set their cookie under the prefix, and
the LangGraph API, the JSON API and the refusals answer there as at the root."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.routing import Mount

from tests.conftest import REFUND_INPUT
from waystone import Runtime
from waystone.web import create_app

TOKEN = "t0ken-for-the-mounted-app"


@pytest.fixture
def mounted(runtime: Runtime) -> Iterator[str]:
    app = Starlette(routes=[Mount("/ops", app=create_app(runtime, token=TOKEN))])
    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_config=None))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def test_the_app_mounted_under_a_prefix_links_and_answers_there(
    runtime: Runtime, mounted: str
) -> None:
    thread_id = runtime.start("refund", REFUND_INPUT).thread_id
    with httpx.Client(base_url=mounted, timeout=60) as client:
        login = client.get("/ops/login")
        assert login.status_code == 200 and 'action="/ops/login"' in login.text
        assert "content-security-policy" in login.headers
        assert client.get("/ops/").status_code == 401  # reads need the token

        done = client.post("/ops/login", data={"token": TOKEN}, follow_redirects=False)
        assert done.status_code == 303 and done.headers["location"] == "/ops/"
        assert "Path=/ops;" in done.headers["set-cookie"]
        board = client.get("/ops/")
        assert board.status_code == 200, board.text
        assert f'href="/ops/runs/{thread_id}"' in board.text
        assert 'action="/ops/logout"' in board.text

        run = client.get(f"/ops/runs/{thread_id}")
        assert run.status_code == 200 and 'id="graph"' in run.text
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        listed = client.get("/ops/api/runs", headers=bearer).json()["runs"]
        assert [r["thread_id"] for r in listed] == [thread_id]
        assert client.get("/ops/ok", headers={"x-api-key": TOKEN}).json() == {"ok": True}
        missing = client.get("/ops/api/nothing", headers=bearer)
        assert missing.status_code == 404 and "no such page" in missing.json()["error"]
