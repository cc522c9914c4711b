"""The LangGraph server API, driven by the official client (``langgraph-sdk``) against a
real ``waystone api`` process, with a real ``waystone worker`` driving the runs it makes:
a chat thread, an interrupt seen and answered with ``command``, state and history, a
second message on the same thread; refusals that change nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import psycopg
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient
from starlette.routing import Route

from tests.support.api import TOKEN, ApiSetup
from tests.support.chat import say, texts
from tests.support.graphs import ASSIST
from tests.support.scan import row_counts
from waystone import Runtime
from waystone.web import create_app
from waystone.web.replies import kind_of


@pytest.fixture
def api_setup() -> ApiSetup:
    return ApiSetup({"WAYSTONE_GRAPHS": ASSIST})


def test_a_chat_thread_through_the_sdk(
    lg: SyncLangGraphClient, sql: psycopg.Connection[Any]
) -> None:
    [assistant] = lg.assistants.search(graph_id="assist")
    assert lg.assistants.get(assistant["assistant_id"])["graph_id"] == "assist"
    thread = lg.threads.create(metadata={"team": "support"})
    thread_id = thread["thread_id"]
    assert thread["status"] == "idle" and thread["metadata"] == {"team": "support"}

    first = lg.runs.wait(
        thread_id, "assist", input={"messages": [{"role": "user", "content": "hi"}]}
    )
    assert texts(first) == ["hi", "echo hi"]

    asked = lg.runs.wait(
        thread_id, "assist", input={"messages": [{"role": "user", "content": "refund?"}]}
    )
    [pending] = asked["__interrupt__"]
    assert pending["value"] == {"question": "refund?"}
    state = lg.threads.get_state(thread_id)
    assert state["next"] == ["assist"] and state["interrupts"][0]["id"] == pending["id"]
    assert lg.threads.get(thread_id)["status"] == "interrupted"

    answered = lg.runs.wait(thread_id, "assist", command={"resume": "yes, refund it"})
    assert texts(answered) == ["hi", "echo hi", "refund?", "a person says: yes, refund it"]
    assert "__interrupt__" not in answered

    again = lg.runs.wait(
        thread_id, "assist", input={"messages": [{"role": "user", "content": "bye"}]}
    )
    assert texts(again)[-2:] == ["bye", "echo bye"]
    final = lg.threads.get_state(thread_id)
    assert texts(final["values"]) == texts(again) and final["next"] == []

    history = lg.threads.get_history(thread_id, limit=100)
    assert [len(h["values"].get("messages", [])) for h in history][:1] == [6]
    assert history[0]["checkpoint"]["checkpoint_id"] == final["checkpoint"]["checkpoint_id"]
    runs = lg.runs.list(thread_id)
    assert [r["status"] for r in runs] == ["success", "success", "success"]
    rows = sql.execute(
        "SELECT count(*) FROM waystone.thread_runs WHERE thread_id = %s", (thread_id,)
    ).fetchone()
    assert rows == (2,)  # the current run, and two that ended before it: Waystone runs
    assert [t["thread_id"] for t in lg.threads.search(metadata={"team": "support"})] == [thread_id]


def test_a_background_run_is_joined_and_listed(lg: SyncLangGraphClient) -> None:
    thread_id = lg.threads.create()["thread_id"]
    run = lg.runs.create(
        thread_id, "assist", input={"messages": [{"role": "user", "content": "x"}]}
    )
    assert run["status"] in ("pending", "running", "success")
    joined = lg.runs.join(thread_id, run["run_id"])
    assert texts(joined) == ["x", "echo x"]
    assert lg.runs.get(thread_id, run["run_id"])["status"] == "success"
    stateless = lg.runs.wait(None, "assist", input={"messages": [{"role": "user", "content": "y"}]})
    assert texts(stateless) == ["y", "echo y"]


def test_refusals_change_nothing(
    api: str, lg: SyncLangGraphClient, sql: psycopg.Connection[Any]
) -> None:
    before = sql.execute("SELECT count(*) FROM waystone.runs").fetchone()
    with (
        get_sync_client(url=api, api_key=None) as anonymous,
        pytest.raises(httpx.HTTPStatusError) as no_token,
    ):
        anonymous.threads.create()
    assert no_token.value.response.status_code == 401
    with pytest.raises(httpx.HTTPStatusError) as unknown:
        lg.runs.wait("no-such-thread", "assist", input={"messages": []})
    assert unknown.value.response.status_code == 404
    thread_id = lg.threads.create()["thread_id"]
    with pytest.raises(httpx.HTTPStatusError) as no_graph:
        lg.runs.create(thread_id, "nothing-by-that-name", input={})
    assert no_graph.value.response.status_code == 404
    with pytest.raises(httpx.HTTPStatusError) as no_input:
        lg.runs.create(thread_id, "assist", input=None)
    assert no_input.value.response.status_code == 400
    with pytest.raises(httpx.HTTPStatusError) as strategy:
        lg.runs.create(thread_id, "assist", input={}, multitask_strategy="later")  # type: ignore[arg-type]
    assert strategy.value.response.status_code == 422
    with pytest.raises(httpx.HTTPStatusError) as nothing_to_resume:
        lg.runs.create(thread_id, "assist", command={"resume": "yes"})
    assert nothing_to_resume.value.response.status_code == 409
    with pytest.raises(httpx.HTTPStatusError) as taken:
        lg.threads.create(thread_id=thread_id)
    assert taken.value.response.status_code == 409
    assert sql.execute("SELECT count(*) FROM waystone.runs").fetchone() == before


MODES = ["values", "updates", "messages-tuple"]


def test_a_chat_thread_streamed_through_the_sdk(lg: SyncLangGraphClient) -> None:
    thread_id = lg.threads.create()["thread_id"]
    first = list(lg.runs.stream(thread_id, "assist", input=say("hi"), stream_mode=MODES))
    assert [p.event for p in first] == ["metadata", "values", "messages", "updates", "values"]
    assert texts(first[-1].data) == ["hi", "echo hi"]
    assert first[2].data[0]["content"] == "echo hi"  # (message, metadata)
    assert first[3].data == {"assist": {"messages": [first[2].data[0]]}}

    asked = list(lg.runs.stream(thread_id, "assist", input=say("refund?"), stream_mode=MODES))
    assert [p.event for p in asked] == ["metadata", "values", "updates", "values"]
    [pending] = asked[2].data["__interrupt__"]
    assert pending["value"] == {"question": "refund?"}
    assert lg.threads.get_state(thread_id)["interrupts"][0]["id"] == pending["id"]

    answered = list(
        lg.runs.stream(thread_id, "assist", command={"resume": "yes"}, stream_mode=MODES)
    )
    assert [p.event for p in answered] == ["metadata", "values", "messages", "updates", "values"]
    assert texts(answered[-1].data)[-1] == "a person says: yes"
    run_id = answered[0].data["run_id"]

    # the whole run, joined afterwards: its question, its interrupt, its answer, once each
    joined = list(lg.runs.join_stream(thread_id, run_id, stream_mode=MODES))
    assert [p.event for p in joined[1:]] == [p.event for p in asked[1:] + answered[1:]]
    assert len({p.id for p in joined[1:]}) == len(joined) - 1
    # reconnected after its third event, it gets the rest and nothing twice
    rest = list(lg.runs.join_stream(thread_id, run_id, last_event_id=joined[3].id))
    assert [p.id for p in rest[1:]] == [p.id for p in joined[4:]]

    again = list(lg.runs.stream(thread_id, "assist", input=say("bye"), stream_mode=MODES))
    assert texts(again[-1].data)[-2:] == ["bye", "echo bye"]
    assert texts(lg.threads.get_state(thread_id)["values"]) == texts(again[-1].data)
    assert len(lg.threads.get_history(thread_id, limit=100)) == 9


def test_a_refused_run_on_a_thread_it_would_make_makes_no_row(
    api: str, sql: psycopg.Connection[Any]
) -> None:
    bad = {
        "no assistant_id": ({"input": say("x")}, 422),
        "an unknown graph": ({"assistant_id": "nothing-by-that-name", "input": say("x")}, 404),
        "no input": ({"assistant_id": "assist"}, 400),
        "a wrong strategy": (
            {"assistant_id": "assist", "input": say("x"), "multitask_strategy": "later"},
            422,
        ),
        "an option not done": (
            {"assistant_id": "assist", "input": say("x"), "after_seconds": 5},
            422,
        ),
        "a breakpoint on no node": (
            {"assistant_id": "assist", "input": say("x"), "interrupt_before": ["no-node"]},
            400,
        ),
        "a webhook that is no URL": (
            {"assistant_id": "assist", "input": say("x"), "webhook": "ftp://x"},
            400,
        ),
        "a resume of nothing": ({"assistant_id": "assist", "command": {"resume": "y"}}, 409),
    }
    paths = ["/runs/wait", "/runs/stream", "/threads/made-here/runs"]
    before = row_counts(sql)
    with httpx.Client(base_url=api, headers={"x-api-key": TOKEN}, timeout=60) as http:
        for what, (body, status) in bad.items():
            for path in paths:
                sent = body if path.startswith("/runs") else {**body, "if_not_exists": "create"}
                answer = http.post(path, json=sent)
                assert answer.status_code == status, (what, path, answer.text)
    assert row_counts(sql) == before
    with get_sync_client(url=api, api_key=TOKEN) as lg:  # a good one still makes its thread
        streamed = list(lg.runs.stream(None, "assist", input=say("z"), stream_mode="values"))
    assert texts(streamed[-1].data) == ["z", "echo z"]


Call = Callable[[SyncLangGraphClient, str, str], object]
YEARLY = "0 0 1 1 *"
# Each route of the API that takes a body, with a call of the SDK that sends a wrong one,
# and the field that is wrong.
MALFORMED: dict[tuple[str, str], tuple[Call, str]] = {
    ("POST", "/assistants/search"): (lambda lg, t, c: lg.assistants.search(limit="9"), "limit"),
    ("POST", "/assistants/count"): (lambda lg, t, c: lg.assistants.count(name=5), "name"),  # type: ignore[arg-type]
    ("POST", "/assistants"): (
        lambda lg, t, c: lg.assistants.create("assist", if_exists="maybe"),  # type: ignore[arg-type]
        "if_exists",
    ),
    ("PATCH", "/assistants/{assistant_id}"): (
        lambda lg, t, c: lg.assistants.update("assist", name=5),  # type: ignore[arg-type]
        "name",
    ),
    ("POST", "/assistants/{assistant_id}/versions"): (
        lambda lg, t, c: lg.assistants.get_versions("assist", limit="9"),  # type: ignore[arg-type]
        "limit",
    ),
    ("POST", "/assistants/{assistant_id}/latest"): (
        lambda lg, t, c: lg.assistants.set_latest("assist", "1"),  # type: ignore[arg-type]
        "version",
    ),
    ("POST", "/threads"): (
        lambda lg, t, c: lg.threads.create(if_exists="sometimes"),  # type: ignore[arg-type]
        "if_exists",
    ),
    ("POST", "/threads/search"): (lambda lg, t, c: lg.threads.search(status="asleep"), "status"),  # type: ignore[arg-type]
    ("PATCH", "/threads/{thread_id}"): (
        lambda lg, t, c: lg.threads.update(t, metadata="x"),  # type: ignore[arg-type]
        "metadata",
    ),
    ("POST", "/threads/{thread_id}/state"): (
        lambda lg, t, c: lg.threads.update_state(t, say("x"), as_node=7),  # type: ignore[arg-type]
        "as_node",
    ),
    ("POST", "/threads/{thread_id}/state/checkpoint"): (
        lambda lg, t, c: lg.threads.get_state(t, checkpoint={"checkpoint_ns": ""}),
        "checkpoint.checkpoint_id",
    ),
    ("POST", "/threads/{thread_id}/history"): (
        lambda lg, t, c: lg.threads.get_history(t, limit="9"),  # type: ignore[arg-type]
        "limit",
    ),
    ("POST", "/threads/{thread_id}/runs"): (
        lambda lg, t, c: lg.runs.create(t, 7, input=say("x")),  # type: ignore[arg-type]
        "assistant_id",
    ),
    ("POST", "/threads/{thread_id}/runs/wait"): (
        lambda lg, t, c: lg.runs.wait(t, "assist", input=say("x"), if_not_exists="maybe"),  # type: ignore[arg-type]
        "if_not_exists",
    ),
    ("POST", "/threads/{thread_id}/runs/stream"): (
        lambda lg, t, c: list(lg.runs.stream(t, "assist", input=say("x"), stream_subgraphs="y")),  # type: ignore[arg-type]
        "stream_subgraphs",
    ),
    ("POST", "/runs/wait"): (
        lambda lg, t, c: lg.runs.wait(None, "assist", input=say("x"), interrupt_before=5),  # type: ignore[arg-type]
        "interrupt_before",
    ),
    ("POST", "/runs/stream"): (
        lambda lg, t, c: list(lg.runs.stream(None, "assist", input=say("x"), feedback_keys="k")),  # type: ignore[arg-type]
        "feedback_keys",
    ),
    ("POST", "/runs/cancel"): (
        lambda lg, t, c: lg.runs.cancel_many(thread_id=t, run_ids="r"),  # type: ignore[arg-type]
        "run_ids",
    ),
    ("POST", "/runs/crons"): (
        lambda lg, t, c: lg.crons.create("assist", schedule=YEARLY, enabled="yes"),  # type: ignore[arg-type]
        "enabled",
    ),
    ("POST", "/threads/{thread_id}/runs/crons"): (
        lambda lg, t, c: lg.crons.create_for_thread(t, "assist", schedule=YEARLY, metadata="x"),  # type: ignore[arg-type]
        "metadata",
    ),
    ("POST", "/runs/crons/search"): (
        lambda lg, t, c: lg.crons.search(sort_by="whenever"),  # type: ignore[arg-type]
        "sort_by",
    ),
    ("POST", "/runs/crons/count"): (
        lambda lg, t, c: lg.crons.count(thread_id=5),  # type: ignore[arg-type]
        "thread_id",
    ),
    ("PATCH", "/runs/crons/{cron_id}"): (
        lambda lg, t, c: lg.crons.update(c, enabled="yes"),  # type: ignore[arg-type]
        "enabled",
    ),
    ("POST", "/store/items/search"): (
        lambda lg, t, c: lg.store.search_items(["a"], limit="9"),  # type: ignore[arg-type]
        "limit",
    ),
    ("POST", "/store/namespaces"): (
        lambda lg, t, c: lg.store.list_namespaces(prefix="a"),  # type: ignore[arg-type]
        "prefix",
    ),
}
NO_BODY = {
    ("POST", "/threads/{thread_id}/copy"),
    ("POST", "/threads/{thread_id}/runs/{run_id}/cancel"),
}
# The thread protocol answers a bad command in its own shape, an error with a code
# (tests/js/thread_protocol.test.mjs tries them, through tests/acceptance/test_react_hooks.py).
PROTOCOL = {
    ("POST", "/threads/{thread_id}/commands"),
    ("POST", "/threads/{thread_id}/stream/events"),
}


def test_every_route_that_takes_a_body_is_tried_with_a_malformed_one(runtime: Runtime) -> None:
    app = create_app(runtime, token=TOKEN)
    taking = {
        (method, route.path)
        for route in app.routes
        if isinstance(route, Route) and kind_of(route.path, "POST") == "langgraph"
        for method in route.methods or ()
        if method in ("POST", "PATCH")
    }
    assert taking - NO_BODY - PROTOCOL == set(MALFORMED)


@pytest.mark.parametrize("route", list(MALFORMED), ids=" ".join)
def test_a_malformed_body_answers_422_naming_the_field(
    lg: SyncLangGraphClient, sql: psycopg.Connection[Any], route: tuple[str, str]
) -> None:
    thread_id = lg.threads.create()["thread_id"]
    cron_id = lg.crons.create("assist", schedule=YEARLY, input=say("x"))["cron_id"]
    before = row_counts(sql)
    call, field = MALFORMED[route]
    with pytest.raises(httpx.HTTPStatusError) as refused:
        call(lg, thread_id, cron_id)
    assert refused.value.response.status_code == 422
    detail = refused.value.response.json()["detail"]
    assert f"{field}: " in detail, detail
    assert row_counts(sql) == before


def test_a_resume_naming_the_threads_head_goes_on_as_use_stream_sends_it(
    lg: SyncLangGraphClient,
) -> None:
    """useStream sends the thread's newest checkpoint with an answer: the run goes on where
    it waits; an answer from any other checkpoint is refused."""
    thread_id = lg.threads.create()["thread_id"]
    lg.runs.wait(thread_id, "assist", input={"messages": [{"role": "user", "content": "hi"}]})
    older = lg.threads.get_state(thread_id)["checkpoint"]
    lg.runs.wait(thread_id, "assist", input={"messages": [{"role": "user", "content": "ok?"}]})
    head = lg.threads.get_state(thread_id)["checkpoint"]
    answer: dict[str, Any] = {"command": {"resume": "yes"}, "input": {}}
    with pytest.raises(httpx.HTTPStatusError) as elsewhere:
        lg.runs.wait(thread_id, "assist", checkpoint=older, **answer)
    assert elsewhere.value.response.status_code == 422
    answered = lg.runs.wait(thread_id, "assist", checkpoint=head, **answer)
    assert texts(answered)[-1] == "a person says: yes"
