"""Custom auth, as ``langgraph dev`` applies it: the reference documentation's ``Auth``
example (:mod:`tests.support.auth_example`) named by ``langgraph.json``'s ``auth.path``,
and the same client calls (:mod:`tests.support.auth_calls`) against a real ``waystone api``
and worker answer what ``langgraph dev`` answered (``scripts/auth_diff.py`` runs both
side by side): who is refused, what each user sees, and who the graph was told asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client

from tests.conftest import ROOT
from tests.support.api import ApiSetup
from tests.support.auth_calls import calls
from tests.support.chat import say

EXAMPLE = ROOT / "tests" / "support" / "auth_example.py"

# What langgraph dev (langgraph-api 0.16.7, in memory) answered to tests.support.auth_calls.
REFERENCE: list[tuple[str, Any]] = [
    ("no token: info", "answered"),
    ("no token: search", 401),
    ("wrong token: search", 401),
    ("wrong token: create", 401),
    ("alice creates: metadata", {"owner": "user1", "team": "a"}),
    ("bob creates: metadata", {"owner": "user2"}),
    ("alice gets hers", {"owner": "user1", "team": "a"}),
    ("bob gets alice's", 404),
    ("alice searches", ["alice's"]),
    ("bob searches", ["bob's"]),
    ("bob searches alice's team", []),
    ("bob updates alice's", 404),
    ("alice updates hers", {"n": 1, "owner": "user1", "team": "a"}),
    ("alice's after updates", {"n": 1, "owner": "user1", "team": "a"}),
    ("bob copies alice's", 409),
    ("alice copies hers: metadata", {"n": 1, "owner": "user1", "team": "a"}),
    ("bob takes alice's id (raise)", 409),
    ("bob takes alice's id (do_nothing)", "answered"),  # no filter on threads.create
    ("alice runs on hers", ["hi", "hi for user1 (Alice, user1)"]),
    ("bob runs on alice's", 404),
    ("bob starts a run on alice's", 404),
    ("bob streams on alice's", 404),
    ("alice lists her runs", 1),
    ("bob lists alice's runs", 404),
    ("bob gets alice's run", 404),
    ("bob joins alice's run", 404),
    ("bob joins alice's run's stream", "answered"),
    ("bob cancels alice's run", 404),
    ("bob reads alice's state", 404),
    ("bob reads alice's history", 404),
    ("bob updates alice's state", 404),
    ("alice's state", ["hi", "hi for user1 (Alice, user1)"]),
    ("bob's run makes a thread", ["yo", "yo for user2 (Bob, user2)"]),
    ("bob's run's thread: owner", "user2"),
    ("alice gets bob's run's thread", 404),
    ("alice runs without a thread", ["solo", "solo for user1 (Alice, user1)"]),
    ("bob runs on his", ["mine", "mine for user2 (Bob, user2)"]),
    ("alice searches assistants", 0),
    ("alice gets the assistant", 404),
    ("alice makes a cron", "made"),
    ("alice searches crons", 1),
    ("bob searches crons", 0),
    ("bob deletes alice's cron", 404),
    ("alice deletes her cron", None),
    ("bob deletes alice's", 404),
    ("alice deletes hers", None),
    ("alice gets hers, deleted", 404),
]
# Where Waystone answers otherwise, on purpose (docs/api.md, "Custom auth"): a thread the
# caller may not see is 404 everywhere, before any stream starts.
DIFFERENT = {"bob copies alice's": 404, "bob joins alice's run's stream": 404}


@pytest.fixture
def api_setup(tmp_path: Path) -> ApiSetup:
    config = tmp_path / "langgraph.json"
    config.write_text(
        json.dumps(
            {
                "dependencies": ["."],
                "graphs": {"agent": f"{EXAMPLE}:graph"},
                "auth": {"path": f"{EXAMPLE}:auth"},
            }
        )
    )
    return ApiSetup({"WAYSTONE_LANGGRAPH_JSON": str(config)})


def test_the_docs_example_answers_as_the_reference(api: str) -> None:
    assert calls(api) == [(what, DIFFERENT.get(what, said)) for what, said in REFERENCE]


def test_the_operator_token_is_not_a_user(api: str, api_setup: ApiSetup) -> None:
    """With a custom auth, its handler alone says who calls the API: the operator's
    token is refused like any token it does not know."""
    with (
        get_sync_client(url=api, api_key=api_setup.token) as operator,
        pytest.raises(httpx.HTTPStatusError) as refused,
    ):
        operator.threads.search()
    assert refused.value.response.status_code == 401


def test_a_run_keeps_its_caller(api: str) -> None:
    """The caller the run was made by is kept with it: its graph is told, and its
    metadata carries the owner the handler gave it."""
    headers = {"Authorization": "Bearer user2-token"}
    with get_sync_client(url=api, api_key=None, headers=headers) as bob:
        thread = bob.threads.create()["thread_id"]
        done = bob.runs.wait(thread, "agent", input=say("hey"))
        [run] = bob.runs.list(thread)
    assert done["messages"][-1]["content"] == "hey for user2 (Bob, user2)"
    assert run["metadata"]["owner"] == "user2"
