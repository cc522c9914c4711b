"""Owners per token, through the official client against a real ``waystone api`` and a
real ``waystone worker``: a thread belongs to the owner whose token made it; another
owner's token gets 404 for it and for everything under it (runs, state, history, streams,
changes); searches list the caller's threads only; the operator's token sees them all; a
request with no token is refused and changes nothing."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from tests.conftest import Cli
from tests.support.api import ApiSetup
from tests.support.chat import say
from tests.support.graphs import ASSIST
from waystone.web import shapes

OPERATOR, ALICE, BOB = "operator-token", "alice-token", "bob-token"


@pytest.fixture
def api_setup(tmp_path: Path) -> ApiSetup:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"# owner=token\nalice={ALICE}\n\nbob={BOB}\n")
    tokens.chmod(0o600)
    return ApiSetup(
        {"WAYSTONE_GRAPHS": ASSIST, "WAYSTONE_API_TOKENS_FILE": str(tokens)}, token=OPERATOR
    )


@pytest.fixture
def clients(api: str) -> Iterator[dict[str, SyncLangGraphClient]]:
    keys = {"operator": OPERATOR, "alice": ALICE, "bob": BOB}
    with ExitStack() as stack:
        yield {
            who: stack.enter_context(get_sync_client(url=api, api_key=key))
            for who, key in keys.items()
        }


def status_of(call: Callable[[], Any]) -> int:
    with pytest.raises(httpx.HTTPStatusError) as refused:
        result = call()
        if not isinstance(result, dict | list):
            list(result)  # a stream: the status comes with its first read
    return refused.value.response.status_code


def test_another_owner_finds_nothing_of_a_thread(
    clients: dict[str, SyncLangGraphClient], cli: Cli
) -> None:
    alice, bob, operator = clients["alice"], clients["bob"], clients["operator"]
    mine = alice.threads.create(metadata={"team": "a"})["thread_id"]
    done = alice.runs.wait(mine, "assist", input=say("hi"))
    assert [m["content"] for m in done["messages"]] == ["hi", "echo hi"]
    [run] = alice.runs.list(mine)
    checkpoint_id = alice.threads.get_state(mine)["checkpoint"]["checkpoint_id"]

    refused = {
        "get": lambda: bob.threads.get(mine),
        "state": lambda: bob.threads.get_state(mine),
        "state at": lambda: bob.threads.get_state(mine, checkpoint_id=checkpoint_id),
        "state at (post)": lambda: bob.threads.get_state(
            mine, checkpoint={"checkpoint_id": checkpoint_id}
        ),
        "history": lambda: bob.threads.get_history(mine),
        "update": lambda: bob.threads.update(mine, metadata={"team": "b"}),
        "update state": lambda: bob.threads.update_state(mine, say("x")),
        "copy": lambda: bob.threads.copy(mine),
        "delete": lambda: bob.threads.delete(mine),
        "runs": lambda: bob.runs.list(mine),
        "run": lambda: bob.runs.get(mine, run["run_id"]),
        "join": lambda: bob.runs.join(mine, run["run_id"]),
        "join stream": lambda: bob.runs.join_stream(mine, run["run_id"]),
        "cancel": lambda: bob.runs.cancel(mine, run["run_id"]),
        "create run": lambda: bob.runs.create(mine, "assist", input=say("mine now")),
        "wait": lambda: bob.runs.wait(mine, "assist", input=say("mine now")),
        "stream": lambda: bob.runs.stream(mine, "assist", input=say("mine now")),
        "create run, creating": lambda: bob.runs.create(
            mine, "assist", input=say("x"), if_not_exists="create"
        ),
    }
    assert {name: status_of(call) for name, call in refused.items()} == dict.fromkeys(refused, 404)
    assert status_of(lambda: bob.threads.create(thread_id=mine)) == 409
    assert status_of(lambda: bob.threads.create(thread_id=mine, if_exists="do_nothing")) == 409

    # nothing bob asked changed alice's thread
    assert alice.threads.get(mine)["metadata"] == {
        "team": "a",
        "graph_id": "assist",
        "assistant_id": shapes.assistant_id("assist"),
    }
    assert [r["run_id"] for r in alice.runs.list(mine)] == [run["run_id"]]
    history = cli("history", mine, "--json", env={"WAYSTONE_GRAPHS": ASSIST})
    assert len(json.loads(history.stdout)["runs"]) == 1, history.stderr
    # the operator sees it, and may act on it
    assert operator.threads.get(mine)["thread_id"] == mine
    assert operator.runs.get(mine, run["run_id"])["status"] == "success"


def test_searches_list_the_callers_threads(clients: dict[str, SyncLangGraphClient]) -> None:
    alice, bob, operator = clients["alice"], clients["bob"], clients["operator"]
    a1 = alice.threads.create(metadata={"kind": "x"})["thread_id"]
    b1 = bob.threads.create(metadata={"kind": "x"})["thread_id"]
    # threads a run makes are the caller's too: stateless, and created on first use
    alice.runs.wait(None, "assist", input=say("one-off"))
    b2 = "bob-made-by-a-run"
    bob.runs.wait(b2, "assist", input=say("hi"), if_not_exists="create")
    ops = operator.threads.create()["thread_id"]

    def found(client: SyncLangGraphClient, **filters: Any) -> set[str]:
        return {t["thread_id"] for t in client.threads.search(limit=100, **filters)}

    assert found(bob) == {b1, b2}
    assert found(bob, metadata={"kind": "x"}) == {b1}
    assert found(bob, status="idle") == {b1, b2}
    assert a1 in found(alice) and len(found(alice)) == 2 and not found(alice) & found(bob)
    assert found(operator) >= found(alice) | found(bob) | {ops}
    assert status_of(lambda: alice.threads.get(ops)) == 404  # the operator's own


def test_no_token_is_refused_and_changes_nothing(
    api: str, clients: dict[str, SyncLangGraphClient], sql: psycopg.Connection[Any]
) -> None:
    mine = clients["alice"].threads.create()["thread_id"]
    tables = ["waystone.runs", "waystone.threads", "waystone.thread_owners"]

    def counts() -> list[Any]:
        return [sql.execute(f"SELECT count(*) FROM {t}").fetchone() for t in tables]

    before = counts()
    for key in (None, "not-a-token"):
        with get_sync_client(url=api, api_key=key) as anonymous:
            calls = [
                lambda: anonymous.threads.create(),
                lambda: anonymous.threads.search(),
                lambda: anonymous.threads.get(mine),
                lambda: anonymous.threads.delete(mine),
                lambda: anonymous.runs.wait(mine, "assist", input=say("x")),
                lambda: anonymous.runs.wait(None, "assist", input=say("x")),
            ]
            assert [status_of(c) for c in calls] == [401] * len(calls)
    assert counts() == before


def test_another_owner_finds_nothing_of_a_cron(
    clients: dict[str, SyncLangGraphClient], sql: psycopg.Connection[Any]
) -> None:
    """A cron is its maker's: another owner neither lists, reads, changes nor deletes it;
    the operator sees it; the threads its ticks start are its maker's."""
    alice, bob, operator = clients["alice"], clients["bob"], clients["operator"]
    cron = alice.crons.create("assist", schedule="* * * * * */2", input=say("tick"))
    cron_id = cron["cron_id"]
    assert [c["cron_id"] for c in alice.crons.search()] == [cron_id]
    assert bob.crons.search() == [] and bob.crons.count() == 0
    assert cron_id in [c["cron_id"] for c in operator.crons.search()]
    for call in (
        lambda: bob.crons.update(cron_id, enabled=False),
        lambda: bob.crons.delete(cron_id),
        lambda: bob.http.get(f"/runs/crons/{cron_id}"),
    ):
        assert status_of(call) == 404
    [(enabled,)] = sql.execute(
        "SELECT enabled FROM waystone.crons WHERE cron_id = %s", (cron_id,)
    ).fetchall()
    assert enabled  # bob's refused change changed nothing

    thread_id = None
    for _ in range(600):  # a tick's thread, started by the worker within seconds
        row = sql.execute(
            "SELECT thread_id FROM waystone.cron_ticks WHERE cron_id = %s AND outcome = "
            "'started' LIMIT 1",
            (cron_id,),
        ).fetchone()
        if row is not None:
            thread_id = row[0]
            break
        sql.execute("SELECT pg_sleep(0.05)")
    assert thread_id is not None, "no tick started a run"
    alice.crons.delete(cron_id)
    assert alice.threads.get(thread_id)["thread_id"] == thread_id
    assert status_of(lambda: bob.threads.get(thread_id)) == 404
