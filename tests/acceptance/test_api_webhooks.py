"""Webhooks of the LangGraph server API: runs created through the official client with
``webhook=URL`` against a real ``waystone api``, driven by real ``waystone worker``
processes, call a receiver on loopback once per run that stops: with one worker, with
two, with a worker SIGKILLed between the run's end and the delivery, and with a receiver
that fails (retried, then delivered; or failed once the attempts are spent)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest
from langgraph_sdk.client import SyncLangGraphClient

from tests.acceptance.conftest import Workers
from tests.conftest import Cli, wait_until
from tests.support.api import ApiSetup
from tests.support.chat import say
from tests.support.graphs import ASSIST
from tests.support.hooks import Receiver

GRAPH = {"WAYSTONE_GRAPHS": ASSIST}
# loopback is refused unless listed (as the reference refuses it by default)
HOOKS = {**GRAPH, "WAYSTONE_WEBHOOK_HOSTS": "127.0.0.1", "WAYSTONE_WEBHOOK_BACKOFF": "0.1"}


@pytest.fixture
def api_setup() -> ApiSetup:
    return ApiSetup(HOOKS, worker=None)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as made:
        yield made


def rows(sql: psycopg.Connection[Any]) -> list[tuple[str, int]]:
    found = sql.execute("SELECT status, attempts FROM waystone.webhooks ORDER BY id")
    return [(s, a) for s, a in found.fetchall()]


def history(cli: Cli, thread_id: str) -> dict[str, Any]:
    done = cli("history", thread_id, "--json")
    assert done.returncode == 0, done.stderr
    shown: dict[str, Any] = json.loads(done.stdout)
    return shown


def settled(sql: psycopg.Connection[Any], count: int) -> None:
    """Every webhook's delivery recorded (delivered or failed): none can be sent again."""
    wait_until(
        lambda: len(rows(sql)) == count and all(s in ("delivered", "failed") for s, _ in rows(sql)),
        f"{count} webhook deliveries recorded",
    )


def test_each_run_calls_its_webhook_once(
    lg: SyncLangGraphClient,
    workers: Workers,
    receiver: Receiver,
    cli: Cli,
    sql: psycopg.Connection[Any],
) -> None:
    workers.spawn(env=HOOKS)
    hook = receiver.url("/hook")
    thread_id = lg.threads.create()["thread_id"]
    lg.runs.wait(thread_id, "assist", input=say("hi"), webhook=hook)
    asked = lg.runs.wait(thread_id, "assist", input=say("refund?"), webhook=hook)
    assert asked["__interrupt__"]
    lg.runs.wait(thread_id, "assist", command={"resume": "yes"}, webhook=hook)
    lg.runs.wait(None, "assist", input=say("y"), webhook=hook)
    background = lg.runs.create(thread_id, "assist", input=say("bg"), webhook=hook)
    lg.runs.join(thread_id, background["run_id"])
    streamed = list(lg.runs.stream(thread_id, "assist", input=say("s"), webhook=hook))
    lg.runs.wait(thread_id, "assist", input=say("no hook"))
    settled(sql, 6)

    calls = receiver.to("/hook")
    assert len(calls) == 6, calls  # one per run that stopped, none for the run without
    bodies = [c["body"] for c in calls]
    assert [b["status"] for b in bodies] == ["success", "interrupted", "success"] + ["success"] * 3
    runs = [r["run_id"] for r in reversed(lg.runs.list(thread_id, limit=100))]
    assert [b["run_id"] for b in bodies[:3]] == [runs[0], runs[1], runs[1]]
    assert bodies[4]["run_id"] == background["run_id"]
    assert bodies[5]["run_id"] == streamed[0].data["run_id"]
    assert bodies[3]["thread_id"] != thread_id and "echo y" in str(bodies[3]["values"])
    assert [m["content"] for m in bodies[0]["values"]["messages"]] == ["hi", "echo hi"]
    keys = [c["headers"]["idempotency-key"] for c in calls]
    assert len(set(keys)) == 6
    assert rows(sql) == [("delivered", 1)] * 6

    shown = history(cli, thread_id)
    delivered = [e for e in shown["events"] if e["kind"] == "webhook-delivered"]
    assert len(delivered) == 5 and delivered[0]["evidence"]["key"] == keys[0]


def test_a_webhook_that_is_not_http_or_not_allowed_is_refused(
    lg: SyncLangGraphClient, sql: psycopg.Connection[Any]
) -> None:
    thread_id = lg.threads.create()["thread_id"]
    for url in ("ftp://127.0.0.1/hook", "/relative", "http://10.0.0.1/hook"):
        with pytest.raises(httpx.HTTPStatusError) as refused:
            lg.runs.create(thread_id, "assist", input=say("x"), webhook=url)
        assert refused.value.response.status_code == 400, url
        assert "webhook" in refused.value.response.json()["detail"]
    assert sql.execute("SELECT count(*) FROM waystone.runs").fetchone() == (0,)


@pytest.mark.parametrize(
    ("workers_up", "flags"), [(1, []), (2, []), (1, ["--async"])], ids=["one", "two", "async"]
)
def test_one_call_per_run_with_one_or_two_workers(
    lg: SyncLangGraphClient,
    workers: Workers,
    receiver: Receiver,
    sql: psycopg.Connection[Any],
    workers_up: int,
    flags: list[str],
) -> None:
    for _ in range(workers_up):
        workers.spawn("--concurrency", "2", *flags, env=HOOKS)
    made = [
        lg.runs.create(
            lg.threads.create()["thread_id"],
            "assist",
            input=say(f"m{n}"),
            webhook=receiver.url("/hook"),
        )
        for n in range(8)
    ]
    settled(sql, 8)
    calls = receiver.to("/hook")
    assert sorted(c["body"]["run_id"] for c in calls) == sorted(r["run_id"] for r in made)
    assert len({c["headers"]["idempotency-key"] for c in calls}) == 8


def test_a_worker_killed_before_the_delivery_leaves_it_to_another(
    lg: SyncLangGraphClient, workers: Workers, receiver: Receiver, sql: psycopg.Connection[Any]
) -> None:
    short = {**HOOKS, "WAYSTONE_WEBHOOK_TIMEOUT": "1"}  # the claim's lease: 6 s
    killed = workers.spawn(env={**short, "WAYSTONE_CRASH_AT": "webhook:before-send"})
    thread_id = lg.threads.create()["thread_id"]
    lg.runs.wait(thread_id, "assist", input=say("hi"), webhook=receiver.url("/hook"))
    wait_until(lambda: killed.poll() is not None, "the worker killed before the send")
    assert killed.returncode == -9 and receiver.calls == []
    workers.spawn(env=short)
    settled(sql, 1)
    assert len(receiver.to("/hook")) == 1
    assert rows(sql) == [("delivered", 2)]  # the killed worker's attempt counted


def test_a_worker_killed_after_the_send_sends_the_same_key_again(
    lg: SyncLangGraphClient, workers: Workers, receiver: Receiver, sql: psycopg.Connection[Any]
) -> None:
    """The one window left: the request left, its outcome was not recorded."""
    short = {**HOOKS, "WAYSTONE_WEBHOOK_TIMEOUT": "1"}
    killed = workers.spawn(env={**short, "WAYSTONE_CRASH_AT": "webhook:after-send"})
    thread_id = lg.threads.create()["thread_id"]
    lg.runs.wait(thread_id, "assist", input=say("hi"), webhook=receiver.url("/hook"))
    wait_until(lambda: killed.poll() is not None, "the worker killed after the send")
    workers.spawn(env=short)
    settled(sql, 1)
    first, again = receiver.to("/hook")
    assert first["headers"]["idempotency-key"] == again["headers"]["idempotency-key"]
    assert first["body"]["run_id"] == again["body"]["run_id"]


def test_a_failing_receiver_is_retried_then_delivered_or_failed(
    lg: SyncLangGraphClient,
    workers: Workers,
    cli: Cli,
    sql: psycopg.Connection[Any],
) -> None:
    workers.spawn(env={**HOOKS, "WAYSTONE_WEBHOOK_ATTEMPTS": "4"})
    with Receiver({"/flaky": [500, 500]}) as receiver:
        receiver.always["/down"] = 503
        flaky = lg.threads.create()["thread_id"]
        lg.runs.wait(flaky, "assist", input=say("a"), webhook=receiver.url("/flaky"))
        down = lg.threads.create()["thread_id"]
        lg.runs.wait(down, "assist", input=say("b"), webhook=receiver.url("/down"))
        receiver.always["/gone"] = 410  # a refusal: not retried
        lg.runs.wait(None, "assist", input=say("c"), webhook=receiver.url("/gone"))
        settled(sql, 3)
        assert len(receiver.to("/flaky")) == 3 and len(receiver.to("/down")) == 4
    assert rows(sql) == [("delivered", 3), ("failed", 4), ("failed", 1)]
    kinds = [e["kind"] for e in history(cli, flaky)["events"]]
    assert [k for k in kinds if k.startswith("webhook")] == ["webhook-retry"] * 2 + [
        "webhook-delivered"
    ]
    events = history(cli, down)["events"]
    [failed] = [e for e in events if e["kind"] == "webhook-failed"]
    assert "failed after 4 attempts" in failed["reason"]
    [run] = lg.runs.list(down)
    assert run["status"] == "success"  # the run itself unchanged
    state = sql.execute("SELECT state FROM waystone.runs WHERE thread_id = %s", (down,))
    assert state.fetchone() == ("done",)


def test_a_queued_runs_webhook_waits_for_that_run(
    lg: SyncLangGraphClient,
    workers: Workers,
    receiver: Receiver,
    sql: psycopg.Connection[Any],
) -> None:
    """A run enqueued behind another with a webhook: the webhook is called once, when the
    queued run stops, with its values; the end of the run before it does not call it."""
    hook = receiver.url("/hook")
    thread_id = lg.threads.create()["thread_id"]
    first = lg.runs.create(thread_id, "assist", input=say("first"))
    second = lg.runs.create(
        thread_id, "assist", input=say("second"), webhook=hook, multitask_strategy="enqueue"
    )
    assert lg.runs.get(thread_id, second["run_id"])["status"] == "pending"
    workers.spawn(env=HOOKS)  # no worker before: both wait, the second behind the first
    lg.runs.join(thread_id, first["run_id"])
    lg.runs.join(thread_id, second["run_id"])
    settled(sql, 1)

    [call] = receiver.to("/hook")
    body = call["body"]
    assert body["run_id"] == second["run_id"] and body["status"] == "success"
    contents = [m["content"] for m in body["values"]["messages"]]
    assert contents[-2:] == ["second", "echo second"], contents
