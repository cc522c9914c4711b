"""Assistants through the official client against a real ``waystone api`` and a real
``waystone worker``: each graph's own (``created_by: system``) found as LangGraph Studio
finds them; a user's own made, changed into versions, put back to an older version,
searched, counted and deleted; a run on one starts from its config and context; another
owner's token finds none of them."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from tests.conftest import ROOT, Cli, wait_until
from tests.support.api import ApiSetup, api_server
from tests.support.blocks import block
from tests.support.hooks import Receiver

GRAPHS = (
    "steps=tests.support.option_graphs:two_steps,nested=tests.support.stream_graphs:nested_graph"
)
OPERATOR, ALICE, BOB = "operator-token", "alice-token", "bob-token"


@pytest.fixture
def api_setup(tmp_path: Path) -> ApiSetup:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice={ALICE}\nbob={BOB}\n")
    tokens.chmod(0o600)
    env = {
        "WAYSTONE_GRAPHS": GRAPHS,
        "WAYSTONE_API_TOKENS_FILE": str(tokens),
        "WAYSTONE_WEBHOOK_HOSTS": "127.0.0.1",  # the test's receiver
    }
    return ApiSetup(env, token=OPERATOR)


def status_of(call: Callable[[], Any]) -> int:
    with pytest.raises(httpx.HTTPStatusError) as refused:
        call()
    return refused.value.response.status_code


pytestmark = pytest.mark.slow


def test_graphs_assistants_are_the_systems(lg: SyncLangGraphClient) -> None:
    found = lg.assistants.search(metadata={"created_by": "system"})
    assert {"nested", "steps"} <= {a["graph_id"] for a in found}  # and the demo's agent
    steps = next(a for a in found if a["graph_id"] == "steps")
    assert steps["version"] == 1 and steps["name"] == "steps"
    assert lg.assistants.get(steps["assistant_id"]) == steps
    assert lg.assistants.count(metadata={"created_by": "system"}) == len(found)
    [version] = lg.assistants.get_versions(steps["assistant_id"])
    assert version["version"] == 1 and "updated_at" not in version
    fixed = steps["assistant_id"]
    assert status_of(lambda: lg.assistants.update(fixed, config={"recursion_limit": 3})) == 409
    assert status_of(lambda: lg.assistants.delete(fixed)) == 409
    assert lg.assistants.get(fixed) == steps  # unchanged


def test_versions_search_and_delete(lg: SyncLangGraphClient, sql: psycopg.Connection[Any]) -> None:
    made = lg.assistants.create(
        "steps",
        config={"configurable": {"persona": "pirate"}},
        metadata={"team": "a", "owner_mail": "ana@example.com"},
        name="Pirate helper",
        description="talks like a pirate",
    )
    aid = made["assistant_id"]
    assert made["version"] == 1 and made["context"] == {"persona": "pirate"}  # kept in step
    assert made["metadata"]["owner_mail"].startswith("<pii:")  # redacted as runs' input
    changed = lg.assistants.update(
        aid, config={"configurable": {"persona": "robot"}}, metadata={"tier": 2}
    )
    assert changed["version"] == 2
    assert changed["config"] == {"configurable": {"persona": "robot"}}
    assert changed["metadata"]["team"] == "a" and changed["metadata"]["tier"] == 2
    assert changed["name"] == "Pirate helper"  # what the update does not give is kept
    versions = lg.assistants.get_versions(aid)
    assert [v["version"] for v in versions] == [2, 1]
    assert [v["version"] for v in lg.assistants.get_versions(aid, metadata={"tier": 2})] == [2]

    back = lg.assistants.set_latest(aid, 1)
    assert back["version"] == 1 and back["config"]["configurable"]["persona"] == "pirate"
    assert lg.assistants.get(aid)["version"] == 1
    assert status_of(lambda: lg.assistants.set_latest(aid, 7)) == 404
    assert status_of(lambda: lg.assistants.get("not-a-uuid")) == 422  # as the reference

    assert [a["assistant_id"] for a in lg.assistants.search(metadata={"team": "a"})] == [aid]
    assert [a["assistant_id"] for a in lg.assistants.search(name="pirate")] == [aid]
    assert lg.assistants.count(graph_id="steps") == 2  # the graph's own and this one
    newest_first = lg.assistants.search(graph_id="steps")
    assert [a["assistant_id"] for a in newest_first][0] == aid
    picked = lg.assistants.search(graph_id="steps", select=["assistant_id", "version"], limit=1)
    assert picked == [{"assistant_id": aid, "version": 1}]
    assert status_of(lambda: lg.assistants.search(graph_id="nope")) == 404

    again = lg.assistants.create("steps", assistant_id=aid, if_exists="do_nothing")
    assert again["assistant_id"] == aid and again["version"] == 1
    assert status_of(lambda: lg.assistants.create("steps", assistant_id=aid)) == 409

    stored = sql.execute("SELECT metadata::text FROM waystone.assistant_versions").fetchall()
    assert len(stored) == 2 and not any("ana@example.com" in row[0] for row in stored)
    kept = lg.threads.create(metadata={"assistant_id": "another"})["thread_id"]
    named = lg.threads.create(metadata={"assistant_id": aid})["thread_id"]
    waiting = lg.threads.create(metadata={"assistant_id": aid})["thread_id"]
    lg.runs.wait(waiting, aid, input={"text": "hi"}, interrupt_before=["second"])
    assert lg.threads.get(waiting)["status"] == "interrupted"
    lg.assistants.delete(aid, delete_threads=True)
    assert status_of(lambda: lg.assistants.get(aid)) == 404
    assert status_of(lambda: lg.threads.get(named)) == 404  # its threads with it
    assert lg.threads.get(kept)["thread_id"] == kept
    assert lg.threads.get(waiting)["status"] == "interrupted"  # its run not ended: kept
    assert sql.execute("SELECT count(*) FROM waystone.assistant_versions").fetchone() == (0,)
    assert status_of(lambda: lg.runs.wait(None, aid, input={"text": "hi"})) == 404
    assert status_of(lambda: lg.crons.create(aid, schedule="0 9 * * *", input={})) == 404


def test_a_run_starts_from_its_assistants_config(lg: SyncLangGraphClient) -> None:
    pirate = lg.assistants.create("steps", config={"configurable": {"persona": "pirate"}})
    aid = pirate["assistant_id"]
    tid = lg.threads.create()["thread_id"]
    done = lg.runs.wait(tid, aid, input={"text": "hi"})
    assert done["log"] == ["first: hi as pirate", "second: tone none"]
    [run] = lg.runs.list(tid)
    assert run["assistant_id"] == aid and run["metadata"]["assistant_id"] == aid
    assert lg.runs.get(tid, run["run_id"])["assistant_id"] == aid

    # the run's own configurable keys over the assistant's
    own = lg.runs.wait(
        None, aid, input={"text": "yo"}, config={"configurable": {"persona": "ninja"}}
    )
    assert own["log"] == ["first: yo as ninja", "second: tone none"]

    # a later version is what the next run starts from
    lg.assistants.update(aid, context={"tone": "dry"})
    toned = lg.runs.wait(None, aid, input={"text": "hey"})
    assert toned["log"] == ["first: hey as none", "second: tone dry"]

    cron = lambda: lg.crons.create(aid, schedule="0 9 * * *", input={"text": "x"})  # noqa: E731
    assert status_of(cron) == 422  # not yet: refused, never run on the graph's own

    # a run's metadata cannot claim another assistant
    system = lg.assistants.search(graph_id="steps", metadata={"created_by": "system"})[0]
    made = lg.runs.create(
        tid, system["assistant_id"], input={"text": "x"}, metadata={"assistant_id": aid}
    )
    assert made["assistant_id"] == system["assistant_id"]
    assert lg.runs.join(tid, made["run_id"])["log"][-1] == "second: tone none"


def test_a_webhook_names_the_runs_assistant(lg: SyncLangGraphClient) -> None:
    aid = lg.assistants.create("steps", context={"tone": "dry"})["assistant_id"]
    with Receiver() as receiver:
        hook = receiver.url("/hook")
        lg.runs.wait(None, aid, input={"text": "hi"}, webhook=hook)
        wait_until(lambda: len(receiver.to("/hook")) == 1, "the run's webhook called")
        [call] = receiver.to("/hook")
    assert call["body"]["assistant_id"] == aid
    assert call["body"]["values"]["log"][-1] == "second: tone dry"


def test_owners_see_their_own_assistants(api: str, lg: SyncLangGraphClient) -> None:
    with (
        get_sync_client(url=api, api_key=ALICE) as alice,
        get_sync_client(url=api, api_key=BOB) as bob,
    ):
        mine = alice.assistants.create("steps", name="alice's", metadata={"k": 1})["assistant_id"]
        assert alice.assistants.get(mine)["name"] == "alice's"
        assert status_of(lambda: bob.assistants.get(mine)) == 404
        assert status_of(lambda: bob.assistants.update(mine, name="bob's")) == 404
        assert status_of(lambda: bob.assistants.delete(mine)) == 404
        assert status_of(lambda: bob.assistants.get_versions(mine)) == 404
        assert status_of(lambda: bob.runs.wait(None, mine, input={"text": "x"})) == 404
        assert status_of(lambda: bob.assistants.create("steps", assistant_id=mine)) == 409
        assert bob.assistants.search(metadata={"k": 1}) == []
        system = bob.assistants.count(metadata={"created_by": "system"})
        assert bob.assistants.count() == system  # the graphs' own: everyone's
        assert [a["assistant_id"] for a in alice.assistants.search(metadata={"k": 1})] == [mine]
        assert lg.assistants.get(mine)["name"] == "alice's"  # the operator sees every one
        assert alice.assistants.get(mine)["version"] == 1


def test_subgraphs_and_schemas(lg: SyncLangGraphClient) -> None:
    nested = lg.assistants.search(graph_id="nested")[0]["assistant_id"]
    found = lg.assistants.get_subgraphs(nested)
    assert list(found) == ["child"]
    assert set(found["child"]) == {
        "input_schema",
        "output_schema",
        "state_schema",
        "config_schema",
        "context_schema",
    }
    assert "messages" in found["child"]["state_schema"]["properties"]
    assert list(lg.assistants.get_subgraphs(nested, namespace="child")) == ["child"]
    assert lg.assistants.get_subgraphs(nested, namespace="other") == {}
    made = lg.assistants.create("nested", name="mine")["assistant_id"]
    assert lg.assistants.get_schemas(made)["graph_id"] == "nested"
    assert lg.assistants.get_subgraphs(made) == found
    drawn = lg.assistants.get_graph(made)
    assert {n["id"] for n in drawn["nodes"]} >= {"first", "child"}


def test_the_docs_assistants_example_runs_as_written(cli: Cli) -> None:
    """The assistants example of docs/api.md, against a server with the README's graph
    and token."""
    example = block("docs/api.md", "Assistants", "py").code
    graphs = "support=waystone.examples.support:builder"
    env = {**cli.env, "WAYSTONE_GRAPHS": graphs, "WAYSTONE_API_TOKEN": "s3cret"}
    with api_server(env) as url:
        code = example.replace("http://127.0.0.1:2024", url)
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "2 {'persona': 'robot'}"
    assert "support" in done.stdout.splitlines()[1]
