"""A run made on a thread whose run is active (double-texting, the ``multitask_strategy``
of the LangGraph server API), driven by the official client against a real ``waystone
api`` process and real ``waystone worker`` processes, as the reference server answers:
``reject`` refuses it and changes nothing, ``enqueue`` runs it after, in order and once,
``interrupt`` stops the active run and goes on from its progress, ``rollback`` stops it
and goes on from the state before it; a run waiting on an interrupt is superseded."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from langgraph_sdk.client import SyncLangGraphClient

from tests.acceptance.conftest import Workers
from tests.conftest import Cli, wait_until
from tests.support.api import ApiSetup, api_client
from tests.support.chat import say, texts
from tests.support.gated import GRAPH, gated_graph
from tests.support.outputs import ok
from waystone import Runtime
from waystone.config import Settings
from waystone.web.shapes import jsonable


@pytest.fixture
def api_setup(gates: Path) -> ApiSetup:
    env = {"WAYSTONE_GRAPHS": GRAPH, "WAYSTONE_TEST_GATES": str(gates)}
    return ApiSetup(env, worker=("--concurrency", "2"))  # one slot held at a gate, one free


@pytest.fixture
def env(cli: Cli, api_setup: ApiSetup) -> dict[str, str]:
    return {**cli.env, **api_setup.env}


def held_at_gate(lg: SyncLangGraphClient, thread_id: str, text: str) -> dict[str, Any]:
    """A run of ``text`` on the thread, once it has noted it and waits at its gate."""
    run = lg.runs.create(thread_id, "gated", input=say(text))
    wait_until(
        lambda: f"noted {text}" in texts(lg.threads.get_state(thread_id)["values"]),
        f"run {text} at its gate",
    )
    return run


def a_thread_with_one_run(lg: SyncLangGraphClient, gates: Path) -> str:
    thread_id = lg.threads.create()["thread_id"]
    (gates / "p").touch()
    assert texts(lg.runs.wait(thread_id, "gated", input=say("p"))) == ["p", "noted p", "done p"]
    return thread_id


def status_code(call: Any) -> int:
    with pytest.raises(httpx.HTTPStatusError) as refused:
        call()
    return refused.value.response.status_code


def history(cli: Cli, env: dict[str, str], thread_id: str) -> Any:
    return ok(cli("history", thread_id, "--json", env=env))


def fenced_out(workers: Workers, thread_id: str) -> bool:
    """Whether a worker's drive of the thread's stopped run was fenced out."""
    return any(
        "lease lost" in line and thread_id in line
        for proc in workers.procs
        for line in workers.output(proc).splitlines()
    )


def ever_said(database_url: str, thread_id: str, text: str) -> bool:
    """Whether any checkpoint of the thread (on its lineage or not) holds ``text``."""
    with Runtime(Settings(database_url=database_url), graphs={"gated": gated_graph}) as rt:
        every = rt.graph("gated").get_state_history(rt.config(thread_id))
        return any(text in texts(jsonable(snap.values)) for snap in every)


def test_reject_refuses_the_run_and_changes_nothing(
    lg: SyncLangGraphClient, gates: Path, sql: psycopg.Connection[Any]
) -> None:
    thread_id = a_thread_with_one_run(lg, gates)
    first = held_at_gate(lg, thread_id, "a")
    before = (
        lg.threads.get_state(thread_id),
        lg.runs.list(thread_id),
        lg.threads.get_history(thread_id, limit=100),
        sql.execute("SELECT count(*) FROM waystone.run_events").fetchone(),
    )
    with pytest.raises(httpx.HTTPStatusError) as refused:
        lg.runs.create(thread_id, "gated", input=say("b"), multitask_strategy="reject")
    assert refused.value.response.status_code == 409
    assert "already running a task" in refused.value.response.json()["detail"]
    assert (
        status_code(
            lambda: lg.runs.wait(thread_id, "gated", input=say("b"), multitask_strategy="reject")
        )
        == 409
    )
    after = (
        lg.threads.get_state(thread_id),
        lg.runs.list(thread_id),
        lg.threads.get_history(thread_id, limit=100),
        sql.execute("SELECT count(*) FROM waystone.run_events").fetchone(),
    )
    assert after == before
    assert sql.execute("SELECT count(*) FROM waystone.pending_runs").fetchone() == (0,)
    (gates / "a").touch()
    assert texts(lg.runs.join(thread_id, first["run_id"]))[-1] == "done a"


def test_enqueued_runs_run_after_the_active_one_in_the_order_made(
    lg: SyncLangGraphClient, gates: Path
) -> None:
    thread_id = lg.threads.create()["thread_id"]
    first = held_at_gate(lg, thread_id, "a")
    second = lg.runs.create(thread_id, "gated", input=say("b"), multitask_strategy="enqueue")
    third = lg.runs.create(thread_id, "gated", input=say("c"))  # enqueue: the default
    assert (second["status"], third["status"]) == ("pending", "pending")
    listed = [(r["run_id"], r["status"]) for r in lg.runs.list(thread_id)]
    assert listed == [
        (third["run_id"], "pending"),
        (second["run_id"], "pending"),
        (first["run_id"], "running"),
    ]
    assert lg.runs.get(thread_id, second["run_id"])["status"] == "pending"
    assert lg.threads.get(thread_id)["status"] == "busy"
    for gate in ("c", "b", "a"):  # the later runs' gates open first: order is by creation
        (gates / gate).touch()
    last = lg.runs.join(thread_id, third["run_id"])
    assert texts(last) == ["a", "noted a", "done a", "b", "noted b", "done b"] + [
        "c",
        "noted c",
        "done c",
    ]
    assert [r["status"] for r in lg.runs.list(thread_id)] == ["success"] * 3
    assert lg.runs.get(thread_id, second["run_id"])["status"] == "success"


def test_an_enqueued_run_survives_a_restart_and_starts_once_with_two_workers(
    env: dict[str, str], workers: Workers, gates: Path, cli: Cli, sql: psycopg.Connection[Any]
) -> None:
    """The queued run lives in Postgres: the API process that made it is gone when the
    run before it ends, a second worker is up, and the run begins once."""
    workers.spawn("--concurrency", "2", env=env)
    with api_client(env) as lg:
        thread_id = lg.threads.create()["thread_id"]
        held_at_gate(lg, thread_id, "a")
        queued = lg.runs.create(thread_id, "gated", input=say("b"), multitask_strategy="enqueue")
    assert sql.execute(
        "SELECT number FROM waystone.pending_runs WHERE thread_id = %s", (thread_id,)
    ).fetchall() == [(2,)]  # in Postgres, with no API process up
    workers.spawn("--concurrency", "2", env=env)
    with api_client(env) as lg:
        assert lg.runs.get(thread_id, queued["run_id"])["status"] == "pending"
        (gates / "a").touch()
        (gates / "b").touch()
        done = lg.runs.join(thread_id, queued["run_id"])
        assert texts(done) == ["a", "noted a", "done a", "b", "noted b", "done b"]
        assert lg.runs.get(thread_id, queued["run_id"])["status"] == "success"
    shown = history(cli, env, thread_id)
    assert [(r["run"], r["state"]) for r in shown["runs"]] == [(1, "done"), (2, "done")]
    claims = [e for e in shown["events"] if e["run"] == 2 and e.get("to_state") == "running"]
    assert len(claims) == 1  # started once, by one of the two workers
    assert sql.execute("SELECT count(*) FROM waystone.pending_runs").fetchone() == (0,)


def test_a_worker_killed_as_its_run_ends_loses_no_queued_run(
    env: dict[str, str],
    workers: Workers,
    gates: Path,
    cli: Cli,
    sql: psycopg.Connection[Any],
) -> None:
    """A worker killed after its run's last step (``run:after-checkpoint``), before the
    run's end is recorded: another worker takes the run over once its lease lapses, ends
    it, and the queued run begins with that end, once."""
    doomed = workers.spawn(
        "--lease-seconds", "2", env={**env, "WAYSTONE_CRASH_AT": "run:after-checkpoint"}
    )
    with api_client(env) as lg:
        thread_id = lg.threads.create()["thread_id"]
        held_at_gate(lg, thread_id, "a")
        queued = lg.runs.create(thread_id, "gated", input=say("b"), multitask_strategy="enqueue")
        (gates / "a").touch()
        assert doomed.wait(timeout=60) == -signal.SIGKILL
        assert lg.runs.get(thread_id, queued["run_id"])["status"] == "pending"
        (gates / "b").touch()
        workers.spawn(env=env)
        done = lg.runs.join(thread_id, queued["run_id"])
        assert texts(done) == ["a", "noted a", "done a", "b", "noted b", "done b"]
        assert [r["status"] for r in lg.runs.list(thread_id)] == ["success", "success"]
    shown = history(cli, env, thread_id)
    claims = [e for e in shown["events"] if e["run"] == 2 and e.get("to_state") == "running"]
    assert len(claims) == 1
    assert sql.execute("SELECT count(*) FROM waystone.pending_runs").fetchone() == (0,)


def test_interrupt_stops_the_active_run_and_goes_on_from_its_progress(
    lg: SyncLangGraphClient,
    gates: Path,
    cli: Cli,
    env: dict[str, str],
    workers: Workers,
    database_url: str,
) -> None:
    thread_id = a_thread_with_one_run(lg, gates)
    first = held_at_gate(lg, thread_id, "a")
    (gates / "b").touch()
    second = lg.runs.create(thread_id, "gated", input=say("b"), multitask_strategy="interrupt")
    assert lg.runs.get(thread_id, first["run_id"])["status"] == "interrupted"
    done = lg.runs.join(thread_id, second["run_id"])
    assert texts(done) == ["p", "noted p", "done p", "a", "noted a", "b", "noted b", "done b"]
    assert [r["status"] for r in lg.runs.list(thread_id)] == ["success", "interrupted", "success"]
    assert texts(lg.threads.get_state(thread_id)["values"]) == texts(done)
    (gates / "a").touch()  # the stopped run's node returns: its write is fenced out
    wait_until(lambda: fenced_out(workers, thread_id), "the stopped drive fenced out")
    assert not ever_said(database_url, thread_id, "done a")
    shown = history(cli, env, thread_id)
    assert [(r["state"], r["stopped_as"]) for r in shown["runs"]] == [
        ("done", None),
        ("failed", "interrupt"),
        ("done", None),
    ]


def test_rollback_stops_the_active_run_and_goes_on_from_the_state_before_it(
    lg: SyncLangGraphClient,
    gates: Path,
    cli: Cli,
    env: dict[str, str],
    workers: Workers,
    database_url: str,
) -> None:
    thread_id = a_thread_with_one_run(lg, gates)
    before = lg.threads.get_history(thread_id, limit=100)
    first = held_at_gate(lg, thread_id, "a")
    (gates / "b").touch()
    second = lg.runs.create(thread_id, "gated", input=say("b"), multitask_strategy="rollback")
    assert status_code(lambda: lg.runs.get(thread_id, first["run_id"])) == 404
    done = lg.runs.join(thread_id, second["run_id"])
    assert texts(done) == ["p", "noted p", "done p", "b", "noted b", "done b"]
    assert [r["run_id"] for r in lg.runs.list(thread_id)][0] == second["run_id"]
    assert first["run_id"] not in [r["run_id"] for r in lg.runs.list(thread_id)]
    after = lg.threads.get_history(thread_id, limit=100)
    assert all("a" not in texts(h["values"]) for h in after)
    assert after[-len(before) :] == before  # the thread's history before the first run
    assert len(after) == 2 * len(before)  # and the second run's, as the reference shows it
    # Waystone keeps what happened: the run, its events and its effect, marked rolled back
    shown = history(cli, env, thread_id)
    assert [(r["state"], r["stopped_as"]) for r in shown["runs"]] == [
        ("done", None),
        ("failed", "rollback"),
        ("done", None),
    ]
    assert any(e["tool"].endswith("leave_note") and "a" in json.dumps(e["args"])
               for e in shown["effects"])  # fmt: skip
    assert (gates / "noted-a").exists()
    (gates / "a").touch()
    wait_until(lambda: fenced_out(workers, thread_id), "the stopped drive fenced out")
    assert not ever_said(database_url, thread_id, "done a")


def test_a_new_run_supersedes_a_run_waiting_on_an_interrupt(
    lg: SyncLangGraphClient, gates: Path, cli: Cli, env: dict[str, str]
) -> None:
    """As the reference: a run stopped on ``interrupt()`` is not in flight, so a new run
    (not a ``command``) begins at once, from the thread's state, the question unanswered.
    Waystone ends the waiting run ``failed`` (waiting -> failed, a cancel's transition),
    marked superseded; the API still shows it ``interrupted``."""
    thread_id = lg.threads.create()["thread_id"]
    asked = lg.runs.wait(thread_id, "gated", input=say("why?"))
    assert asked["__interrupt__"][0]["value"] == {"question": "why?"}
    (gates / "next").touch()
    done = lg.runs.wait(thread_id, "gated", input=say("next"), multitask_strategy="reject")
    assert texts(done) == ["why?", "next", "noted next", "done next"]
    assert [r["status"] for r in lg.runs.list(thread_id)] == ["success", "interrupted"]
    assert lg.threads.get(thread_id)["status"] == "idle"
    shown = history(cli, env, thread_id)
    assert [(r["state"], r["stopped_as"]) for r in shown["runs"]] == [
        ("failed", "supersede"),
        ("done", None),
    ]
