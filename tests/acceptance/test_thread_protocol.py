"""The thread protocol's routes with owners' tokens, against a real ``waystone api`` and
worker: ``run.start`` makes the thread it names for the caller's owner; another owner's
token gets 404 for its commands and its event stream, and its WebSocket is closed; a
request with no token is refused."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.support.api import ApiSetup
from tests.support.chat import say

OPERATOR, ALICE, BOB = "operator-token", "alice-token", "bob-token"
GRAPHS = "hooks=tests.support.hook_graphs:hooks_graph"

pytestmark = pytest.mark.slow


@pytest.fixture
def api_setup(tmp_path: Path) -> ApiSetup:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice={ALICE}\nbob={BOB}\n")
    tokens.chmod(0o600)
    return ApiSetup(
        {"WAYSTONE_GRAPHS": GRAPHS, "WAYSTONE_API_TOKENS_FILE": str(tokens)}, token=OPERATOR
    )


def command(api: str, thread_id: str, token: str | None, body: dict[str, Any]) -> httpx.Response:
    headers = {} if token is None else {"x-api-key": token}
    return httpx.post(f"{api}/threads/{thread_id}/commands", json=body, headers=headers)


def test_a_thread_made_by_run_start_is_its_owners(api: str) -> None:
    thread_id = str(uuid.uuid4())
    start = {
        "id": 1,
        "method": "run.start",
        "params": {"assistant_id": "hooks", "input": say("hi")},
    }
    assert command(api, thread_id, None, start).status_code == 401
    made = command(api, thread_id, ALICE, start)
    assert made.json()["type"] == "success", made.text
    mine = httpx.get(f"{api}/threads/{thread_id}", headers={"x-api-key": ALICE})
    assert mine.status_code == 200
    state = {"id": 2, "method": "state.get", "params": {"namespace": []}}
    assert command(api, thread_id, BOB, state).status_code == 404
    stream = httpx.post(
        f"{api}/threads/{thread_id}/stream/events",
        json={"channels": ["values"]},
        headers={"x-api-key": BOB},
    )
    assert stream.status_code == 404
    socket = api.replace("http://", "ws://") + f"/threads/{thread_id}/stream/events"
    with pytest.raises(InvalidStatus), connect(socket, additional_headers={"x-api-key": BOB}):
        pass
    run_id = made.json()["result"]["run_id"]
    joined = httpx.get(
        f"{api}/threads/{thread_id}/runs/{run_id}/join", headers={"x-api-key": ALICE}, timeout=60
    )
    assert joined.status_code == 200
    with connect(socket, additional_headers={"x-api-key": ALICE}) as ws:
        ws.send(json.dumps(state))
        answer = json.loads(ws.recv(timeout=30))
        # subscribed after the run's events went by: they come all the same, once each
        subscribe = {"id": 3, "method": "subscription.subscribe"}
        ws.send(json.dumps({**subscribe, "params": {"channels": ["lifecycle"]}}))
        said = [json.loads(ws.recv(timeout=30)) for _ in range(3)]
    assert answer["type"] == "success" and answer["id"] == 2
    assert answer["result"]["values"]["messages"][0]["content"] == "hi"
    assert said[0]["type"] == "success" and said[0]["id"] == 3
    assert [e["params"]["data"]["event"] for e in said[1:]] == ["running", "completed"]
