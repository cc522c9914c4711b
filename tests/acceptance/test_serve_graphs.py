"""The pages serve a user's graph: a ``create_react_agent`` whose fake model calls a
read-only ``lookup`` and a ``book`` tool that asks for approval with ``interrupt()``, run
by real ``waystone`` processes (``start``, ``run``, ``serve``, ``worker``), sealed at rest.
In headless Chromium its run page shows the tool calls and results, its interrupt is
answered from the page and a worker takes the run to ``done``, and the dashboard's step
times name the graph's nodes. Over HTTP, an answer without a session, a CSRF token or from
another origin, or one that is not JSON, is refused and changes nothing (read in Postgres).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import psycopg
import pytest

from tests.acceptance.conftest import Workers
from tests.acceptance.test_serve_security import KEY, TOKEN, Serve
from tests.acceptance.test_serve_security import serve as serve  # the fixture
from tests.conftest import Cli, wait_until
from tests.support.browser import chromium, log_in
from tests.support.react_graphs import CALLS, REACT_GRAPHS
from tests.support.rows import changes, run_state, signals

GRAPH = {"WAYSTONE_GRAPHS": REACT_GRAPHS, **KEY}
ASK = {"messages": [{"role": "user", "content": "a trip to Lyon"}]}


@pytest.fixture
def trip(cli: Cli) -> str:
    """A run of the trip agent waiting on its ``book`` tool's ``interrupt()``."""
    started = cli("start", "--graph", "trip", "--input", json.dumps(ASK), "--json", env=GRAPH)
    assert started.returncode == 0, started.stderr
    thread_id: str = json.loads(started.stdout)["thread_id"]
    ran = cli("run", thread_id, "--json", env=GRAPH)
    status = json.loads(ran.stdout)
    assert status["state"] == "waiting" and len(status["interrupts"]) == 1, ran.stderr
    return thread_id


def _interrupt_id(cli: Cli, thread_id: str) -> str:
    status = json.loads(cli("status", thread_id, "--json", env=GRAPH).stdout)
    [pending] = status["interrupts"]
    return str(pending["id"])


def test_an_interrupt_is_answered_from_the_run_page_and_the_run_goes_on(
    cli: Cli,
    serve: Callable[..., Serve],
    workers: Workers,
    trip: str,
    sql: psycopg.Connection[Any],
) -> None:
    s = serve(**GRAPH)
    run_url = f"{s.origin}/runs/{quote(trip, safe='')}"
    with chromium() as browser:
        page = browser.new_context().new_page()
        log_in(page, s.origin, TOKEN)

        # The AI message's tool calls: name, arguments, id (no empty row).
        page.goto(run_url)
        for call in CALLS:
            shown = page.locator(f'.tool-call[data-tool-call-id="{call["id"]}"]').inner_text()
            assert call["name"] in shown and json.dumps(call["args"], sort_keys=True) in shown
        interrupt = page.locator("#interrupts tr.interrupt")
        assert interrupt.count() == 1
        assert "book 2 nights in Lyon?" in interrupt.inner_text()

        # Not JSON: a 400 that says so, and nothing is recorded.
        before = changes(sql)
        interrupt.locator('textarea[name="value"]').fill("{ok: yes}")
        with page.expect_response(lambda r: r.request.method == "POST") as posted:
            interrupt.locator("button.resume").click()
        assert posted.value.status == 400
        assert "the answer is not valid JSON" in page.locator("#error").inner_text()
        assert changes(sql) == before and signals(sql, trip, "resume") == []

        # The answer: back on the run's page, recorded as `waystone resume` records it.
        page.goto(run_url)
        interrupt = page.locator("#interrupts tr.interrupt")
        interrupt.locator('textarea[name="value"]').fill('{"ok": true}')
        with page.expect_response(lambda r: r.request.method == "POST") as posted:
            interrupt.locator("button.resume").click()
        assert posted.value.status == 303
        page.wait_for_url(run_url)
        assert len(signals(sql, trip, "resume")) == 1
        answered = page.locator("#interrupts tr.interrupt").inner_text()
        assert "answered by web; waiting for a worker" in answered
        assert page.locator("#interrupts textarea").count() == 0  # not answered twice

        # A worker goes on with it: the booking is made and the model answers.
        workers.spawn(env=GRAPH)
        wait_until(lambda: run_state(sql, trip) == "done", "the answered run is done")
        page.reload()
        assert page.locator("#interrupts").count() == 0
        results = {
            call["id"]: page.locator(f'.tool-result[data-tool-call-id="{call["id"]}"]').inner_text()
            for call in CALLS
        }
        assert all("success" in r for r in results.values()), results
        assert "lookup" in results["call_lookup"] and "book" in results["call_book"]
        messages = page.locator("#messages").inner_text()
        for text in ("hotels in Lyon: Le Phare", "booked 2 nights in Lyon", "all set"):
            assert text in messages, messages
        run_times = page.locator("#step-times td:nth-child(2)").all_inner_texts()
        assert run_times == ["agent", "tools"]

        # The dashboard's step times: the graph's own nodes, never the preset's check.
        page.goto(s.origin + "/")
        rows = page.locator("#step-times tbody tr").all()
        cells = [tuple(r.locator("td").all_inner_texts()[:3]) for r in rows]
        assert ("trip", "agent", "2") in cells and ("trip", "tools", "1") in cells, cells
        assert all(c[1] != "check" for c in cells), cells


def test_an_answer_without_a_session_token_or_origin_is_refused_and_changes_nothing(
    cli: Cli, serve: Callable[..., Serve], trip: str, sql: psycopg.Connection[Any]
) -> None:
    s = serve(**GRAPH)
    cookie = s.login()
    right = s.csrf(cookie)
    assert right
    path = f"/runs/{quote(trip, safe='')}/resume"
    fields = {"value": "true", "by": "mallory", "interrupt_id": _interrupt_id(cli, trip)}
    same_origin = {"Origin": s.origin}
    before = changes(sql)

    no_session = s.request(
        "POST",
        path,
        "value=true&by=mallory",
        {"Content-Type": "application/x-www-form-urlencoded", **same_origin},
    )
    assert no_session.status == 401
    bearer_only = s.request(
        "POST",
        path,
        "value=true&by=mallory",
        {
            "Content-Type": "application/x-www-form-urlencoded",
            "Authorization": f"Bearer {TOKEN}",
            **same_origin,
        },
    )
    assert bearer_only.status == 401  # a form needs a session; the API token is no session
    for csrf in ("", "0" * 64, right[:-1]):
        refused = s.post_form(path, {**fields, "csrf": csrf}, cookie, same_origin)
        assert refused.status == 403 and b"CSRF token" in refused.body, csrf
    forged = s.post_form(path, {**fields, "csrf": right}, cookie, {"Origin": "http://evil.example"})
    assert forged.status == 403

    assert changes(sql) == before and signals(sql, trip, "resume") == []
    assert run_state(sql, trip) == "waiting"


def test_an_answer_that_is_not_json_or_names_no_pending_interrupt_is_400(
    cli: Cli, serve: Callable[..., Serve], trip: str, sql: psycopg.Connection[Any]
) -> None:
    s = serve(**GRAPH)
    cookie = s.login()
    form = {"by": "ana", "csrf": s.csrf(cookie), "interrupt_id": _interrupt_id(cli, trip)}
    path = f"/runs/{quote(trip, safe='')}/resume"
    same_origin = {"Origin": s.origin}
    before = changes(sql)

    for value, said in (
        ("{ok: yes}", b"the answer is not valid JSON"),
        ("", b"the answer is empty"),
        ("[NaN]", b"NaN, which is not JSON"),
    ):
        reply = s.post_form(path, {**form, "value": value}, cookie, same_origin)
        assert reply.status == 400 and said in reply.body, (value, reply.body)
    unknown = s.post_form(
        path, {**form, "value": "true", "interrupt_id": "nope"}, cookie, same_origin
    )
    assert unknown.status == 400 and b"no pending interrupt" in unknown.body

    assert changes(sql) == before and signals(sql, trip, "resume") == []
    answered = s.post_form(path, {**form, "value": '{"ok": true}'}, cookie, same_origin)
    assert answered.status == 303
    assert answered.headers["location"] == f"/runs/{quote(trip, safe='')}"
    ran = json.loads(cli("run", trip, "--json", env=GRAPH).stdout)
    assert ran["state"] == "done"  # as after `waystone resume --value '{"ok": true}'`
