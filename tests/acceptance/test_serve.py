"""``waystone serve``: the JSON API, provider webhooks and the HTML dashboard in a real
headless Chromium, against a real Postgres and the example provider. Assertions read the
database: a refused request must change nothing."""

from __future__ import annotations

import http.client
import json
import signal
import sys
from typing import Any
from urllib.parse import quote, urlsplit

import psycopg
import pytest

from tests.conftest import REFUND_INPUT
from tests.support.api import piped
from tests.support.browser import chromium
from tests.support.rows import changes, signals
from tests.support.served import TOKEN, Reply, Served
from waystone import Runtime, Settings
from waystone.examples.provider import ProviderProcess
from waystone.web.gate import SESSION_COOKIE
from waystone.web.security import session_cookie


@pytest.fixture
def waiting(runtime: Runtime, provider: ProviderProcess) -> str:
    """A refund run that waits for an approval."""
    del provider
    thread_id = runtime.start("refund", REFUND_INPUT).thread_id
    status = runtime.run(thread_id)
    assert status.state == "waiting" and status.pending_approval is not None
    return thread_id


def test_changes_without_the_token_are_refused_and_change_nothing(
    runtime: Runtime, waiting: str, served: Served, sql: psycopg.Connection[Any]
) -> None:
    tid = quote(waiting, safe="")
    before = changes(sql)
    attempts = [
        ("POST", f"/api/runs/{tid}/approve", {"by": "mallory"}),
        ("POST", f"/api/runs/{tid}/reject", {"by": "mallory", "reason": "no"}),
        ("POST", f"/signals/{tid}/refund.settled", {"id": "evt_1"}),
    ]
    for method, path, body in attempts:
        for auth in (
            {},
            {"Authorization": "Bearer wrong-token"},
            {"Authorization": f"Bearer {TOKEN}x"},
            {"Authorization": f"Basic {TOKEN}"},
            {"Authorization": TOKEN},
        ):
            reply = served.request(method, path, body, headers=auth)
            assert reply.status == 401, (path, auth, reply.body)
            assert "error" in reply.json()
    # The HTML forms: no cookie, a forged one (the token itself), one signed right for a
    # session never opened, one signed with another token.
    forged = [
        {},
        {"Cookie": f"{SESSION_COOKIE}={TOKEN}"},
        {"Cookie": f"{SESSION_COOKIE}={session_cookie(TOKEN, 'never-opened')}"},
        {"Cookie": f"{SESSION_COOKIE}={session_cookie('another-token', 'x')}"},
    ]
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    for cookie in forged:
        for action, body_text in (("approve", "by=mallory"), ("reject", "by=m&reason=no")):
            reply = served.request(
                "POST", f"/runs/{tid}/{action}", body_text, headers={**form, **cookie}
            )
            assert reply.status == 401, (action, cookie, reply.body)
            assert b"log in" in reply.body.lower()
    # A wrong password sets no cookie.
    reply = served.request("POST", "/login", "token=wrong", headers=form)
    assert reply.status == 401 and "set-cookie" not in reply.headers
    assert changes(sql) == before
    assert runtime.status(waiting).decision_recorded is False

    # No token configured at all: every change is refused, with what to do; reads work.
    readonly = Served(runtime, None)
    try:
        for method, path, body in attempts:
            reply = readonly.request(method, path, body, token="")
            assert reply.status == 401
            assert "WAYSTONE_API_TOKEN" in reply.json()["error"]
        reply = readonly.request("POST", "/login", "token=", headers=form)
        assert reply.status == 401 and b"WAYSTONE_API_TOKEN" in reply.body
        reply = readonly.request("POST", f"/runs/{tid}/approve", "by=x", headers=form)
        assert reply.status == 401 and b"WAYSTONE_API_TOKEN" in reply.body
        assert readonly.request("GET", f"/api/runs/{tid}").json()["state"] == "waiting"
        page = readonly.request("GET", "/")
        assert page.status == 200 and b"WAYSTONE_API_TOKEN" in page.body
    finally:
        readonly.close()
    assert changes(sql) == before


def test_api_with_the_token(
    runtime: Runtime, waiting: str, served: Served, sql: psycopg.Connection[Any]
) -> None:
    tid = quote(waiting, safe="")

    def read(path: str) -> Reply:
        return served.request("GET", path, token=TOKEN)

    runs = read("/api/runs")
    assert runs.status == 200 and runs.headers["content-type"] == "application/json"
    assert [r["thread_id"] for r in runs.json()["runs"]] == [waiting]
    assert read("/api/runs?state=waiting").json()["runs"][0]["state"] == "waiting"
    assert read("/api/runs?state=done").json() == {"runs": []}
    assert read("/api/runs?state=bogus").status == 400

    status = read(f"/api/runs/{tid}").json()
    assert status == runtime.status(waiting).to_dict()
    assert status["pending_approval"]["tool"] and status["decision_recorded"] is False
    history = read(f"/api/runs/{tid}/history").json()
    assert history["thread_id"] == waiting and history["state"] == "waiting"
    assert history["events"] and history["checkpoints"]

    for method, path in (
        ("GET", "/api/runs/nope"),
        ("GET", "/api/runs/nope/history"),
        ("POST", "/api/runs/nope/approve"),
        ("POST", "/signals/nope/refund.settled"),
    ):
        reply = served.request(method, path, {"by": "ana"}, token=TOKEN)
        assert reply.status == 404, (path, reply.body)
        assert "unknown thread" in reply.json()["error"]
    assert read("/api/nothing-here").status == 404
    assert read("/nothing-here").status == 404
    assert read(f"/api/runs/{tid}/approve").status == 405

    before = changes(sql)
    for bad in ("{not json", "[1, 2]", '"text"', ""):
        reply = served.request("POST", f"/api/runs/{tid}/approve", bad, token=TOKEN)
        assert reply.status == 400, (bad, reply.body)
        assert "error" in reply.json()
    for bad_body, code in (
        ({}, 422),
        ({"by": ""}, 422),
        ({"by": 3}, 422),
        ({"by": "ana", "args": []}, 400),
    ):
        reply = served.request("POST", f"/api/runs/{tid}/approve", bad_body, token=TOKEN)
        assert reply.status == code, (bad_body, reply.body)
    reply = served.request("POST", f"/api/runs/{tid}/reject", {"by": "ana"}, token=TOKEN)
    assert reply.status == 422  # a rejection needs a reason
    reply = served.request("POST", f"/signals/{tid}/refund.settled", "{oops", token=TOKEN)
    assert reply.status == 400
    reply = served.request("POST", f"/signals/{tid}/approval", {}, token=TOKEN)
    assert reply.status == 400  # approvals go through approve, never a webhook
    assert changes(sql) == before

    # A provider webhook: recorded once per Idempotency-Key.
    for _ in range(2):
        reply = served.request(
            "POST",
            f"/signals/{tid}/refund.settled",
            {"id": "evt_42", "status": "settled"},
            headers={"Idempotency-Key": "evt_42"},
            token=TOKEN,
        )
        assert reply.status == 200, reply.body
        assert reply.json()["thread_id"] == waiting
    assert signals(sql, waiting, "refund.settled") == [
        ({"id": "evt_42", "status": "settled"}, "evt_42", "webhook")
    ]

    reply = served.request(
        "POST", f"/api/runs/{tid}/approve", {"by": "ana", "comment": "ok"}, token=TOKEN
    )
    assert reply.status == 200, reply.body
    assert reply.json()["decision_recorded"] is True
    [(decision, _, actor)] = signals(sql, waiting, "approval")
    assert (decision["choice"], decision["by"], decision["comment"], actor) == (
        "approve",
        "ana",
        "ok",
        "ana",
    )
    assert runtime.run(waiting).state == "done"
    assert read(f"/api/runs/{tid}").json()["state"] == "done"

    # Nothing waits any more: deciding again is a conflict, and changes nothing.
    before = changes(sql)
    for action, body in (("approve", {"by": "ana"}), ("reject", {"by": "ana", "reason": "no"})):
        reply = served.request("POST", f"/api/runs/{tid}/{action}", body, token=TOKEN)
        assert reply.status == 409, reply.body
        assert "not waiting for an approval" in reply.json()["error"]
    reply = served.request("POST", f"/signals/{tid}/refund.settled", {}, token=TOKEN)
    assert reply.status == 409  # a done run takes no more signals
    assert changes(sql) == before


def test_api_reject(
    runtime: Runtime, waiting: str, served: Served, sql: psycopg.Connection[Any]
) -> None:
    reply = served.request(
        "POST",
        f"/api/runs/{quote(waiting, safe='')}/reject",
        {"by": "bo", "reason": "duplicate claim"},
        token=TOKEN,
    )
    assert reply.status == 200, reply.body
    [(decision, _, _)] = signals(sql, waiting, "approval")
    assert (decision["choice"], decision["by"]) == ("reject", "bo")
    ended = (reply.json()["state"], reply.json()["reason"])
    assert ended == ("failed", "rejected by bo: duplicate claim")
    assert runtime.status(waiting).state == "failed"  # at once: nothing drove it
    page = served.request("GET", "/", token=TOKEN).body.decode()
    assert f'data-thread-id="{waiting}"' not in page and "Pending approvals (0)" in page


def test_an_approved_run_is_shown_approved_not_among_pending_approvals(
    runtime: Runtime, waiting: str, served: Served
) -> None:
    tid = quote(waiting, safe="")
    reply = served.request("POST", f"/api/runs/{tid}/approve", {"by": "ana"}, token=TOKEN)
    assert reply.status == 200, reply.body
    shown = "approved by ana; waiting for a worker to resume it"
    for status in (reply.json(), served.request("GET", f"/api/runs/{tid}", token=TOKEN).json()):
        assert (status["state"], status["pending_approval"]) == ("waiting", None)
        assert status["reason"].startswith(shown), status
    [listed] = served.request("GET", "/api/runs?state=waiting", token=TOKEN).json()["runs"]
    assert listed["reason"].startswith(shown)
    assert served.request("GET", "/api/dashboard", token=TOKEN).json()["pending_approvals"] == []
    page = served.request("GET", "/", token=TOKEN).body.decode()
    assert "Pending approvals (0)" in page and f'data-thread-id="{waiting}"' not in page
    assert shown in page
    run_page = served.request("GET", f"/runs/{tid}", token=TOKEN).body.decode()
    assert shown in run_page and 'class="approval"' not in run_page
    assert runtime.run(waiting).state == "done"


def test_a_webhook_whose_signal_name_or_key_holds_personal_data_is_refused(
    waiting: str, served: Served, sql: psycopg.Connection[Any]
) -> None:
    tid = quote(waiting, safe="")
    before = changes(sql)
    for path, key in (
        (f"/signals/{tid}/{quote('ana.lopez@example.com', safe='')}", "evt_1"),
        (f"/signals/{tid}/refund.settled", "+1 415 555 0100"),
    ):
        reply = served.request(
            "POST", path, {"id": "evt_1"}, headers={"Idempotency-Key": key}, token=TOKEN
        )
        assert reply.status == 400, (path, key, reply.body)
        assert "holds personal data" in reply.json()["error"]
    assert changes(sql) == before


def test_an_approval_with_args_null_is_refused_not_taken_for_a_plain_one(
    runtime: Runtime, waiting: str, served: Served, sql: psycopg.Connection[Any]
) -> None:
    before = changes(sql)
    for args in (None, {}, "120.00"):
        reply = served.request(
            "POST",
            f"/api/runs/{quote(waiting, safe='')}/approve",
            {"by": "ana", "args": args},
            token=TOKEN,
        )
        assert reply.status == 400, (args, reply.body)
        assert "'args' must be a non-empty JSON object" in reply.json()["error"]
    assert changes(sql) == before
    assert runtime.status(waiting).pending_approval is not None


def test_bad_identifiers_and_deep_json_are_400_not_500(
    runtime: Runtime, waiting: str, served: Served, sql: psycopg.Connection[Any]
) -> None:
    """A lone surrogate in ``by``, JSON nested past the limit, a 3,000-character signal
    name or key: each is bad input (400, saying what is wrong) and changes nothing."""
    tid = quote(waiting, safe="")
    deep = "[" * 5000 + "]" * 5000
    cases = [
        (f"/api/runs/{tid}/approve", '{"by": "\\ud800"}', {}, "lone surrogate"),
        (f"/api/runs/{tid}/reject", '{"by": "bo", "reason": "\\udc00"}', {}, "lone surrogate"),
        (f"/api/runs/{tid}/approve", '{"by": "ana\\u0007"}', {}, "'by' (who acted) holds U+0007"),
        (f"/api/runs/{tid}/approve", '{"by": "ana", "args": ' + deep + "}", {}, "nested"),
        (f"/signals/{tid}/refund.settled", deep, {}, "nested too deeply"),
        (f"/signals/{tid}/" + "n" * 3000, "{}", {}, "the signal name is 3000 characters"),
        (
            f"/signals/{tid}/refund.settled",
            "{}",
            {"Idempotency-Key": "k" * 3000},
            "the signal key is 3000 characters",
        ),
    ]
    before = changes(sql)
    for path, body, headers, message in cases:
        reply = served.request("POST", path, body, headers=headers, token=TOKEN)
        assert reply.status == 400, (path[-20:], body[:30], reply.body[:200])
        assert message in reply.json()["error"], reply.json()
    reply = served.request("GET", "/api/runs/" + "t" * 3000, token=TOKEN)
    assert reply.status == 400 and "the thread id is 3000 characters" in reply.json()["error"]
    assert changes(sql) == before
    assert runtime.status(waiting).pending_approval is not None


def test_api_dashboard(waiting: str, served: Served) -> None:
    reply = served.request("GET", "/api/dashboard", token=TOKEN)
    assert reply.status == 200, reply.body
    data = reply.json()
    for key in (
        "counts_by_state",
        "active_runs",
        "retries_by_step",
        "step_times",
        "pending_approvals",
        "pending_signals",
        "undelivered_signals",
    ):
        assert key in data, key
    assert waiting in json.dumps(data["pending_approvals"])


def test_dashboard_page_in_a_real_browser(
    runtime: Runtime, waiting: str, served: Served, sql: psycopg.Connection[Any]
) -> None:
    approval = f'.approval[data-thread-id="{waiting}"]'
    run_row = f'tr[id="run-{waiting}"]'
    with chromium() as browser:
        context = browser.new_context()
        page = context.new_page()

        # Not logged in: the page shows nothing of the runs, and says to log in.
        refused = page.goto(served.url + "/")
        assert refused is not None and refused.status == 401
        assert "reading needs the API token" in page.locator("#error").inner_text()
        assert page.locator(approval).count() == 0 and waiting not in page.content()

        # Log in with the token: an HttpOnly, SameSite=Strict cookie, not the token.
        page.locator('a[href="/login"]').first.click()
        page.wait_for_url(served.url + "/login")
        page.fill('input[name="token"]', TOKEN)
        page.click('#login button[type="submit"]')
        page.wait_for_url(served.url + "/")
        [cookie] = context.cookies()
        assert cookie["name"] == SESSION_COOKIE
        assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
        assert TOKEN not in cookie["value"]

        # Approve with a click: back on the dashboard, the decision is in Postgres.
        page.locator(f'{approval} input[name="comment"]').fill("checked the order")
        with page.expect_response(lambda r: r.request.method == "POST") as posted:
            page.locator(f"{approval} button.approve").click()
        assert posted.value.status == 303
        page.wait_for_url(served.url + "/")
        [(decision, _, _)] = signals(sql, waiting, "approval")
        assert (decision["choice"], decision["by"], decision["comment"]) == (
            "approve",
            "web",
            "checked the order",
        )
        assert page.locator(approval).count() == 0  # approved: no longer pending
        assert "approved by web" in page.locator(run_row).inner_text()

        assert runtime.run(waiting).state == "done"
        page.reload()
        assert page.locator(f"{run_row} .run-state").inner_text() == "done"
        assert page.locator(run_row).get_attribute("data-state") == "done"
        assert page.locator(approval).count() == 0

        # The run's history page, through its link.
        page.locator(f"{run_row} a").click()
        page.wait_for_url(served.url + f"/runs/{quote(waiting, safe='')}")
        events = page.locator("#events").inner_text()
        assert "approve by web" in events and "done" in events
        assert urlsplit(page.url).path.endswith(waiting)
        context.close()


SERVE = """
import sys
from waystone.cli.agents import default_agents
from waystone.config import Settings
from waystone.runtime import Runtime
from waystone.web.serve import serve

with Runtime(Settings(database_url=sys.argv[1]), default_agents) as rt:
    serve(rt, "127.0.0.1", 0, sys.argv[2])
print("stopped", flush=True)
"""


def test_serve_prints_its_url_and_stops_on_sigterm(database_url: str) -> None:
    proc = piped([sys.executable, "-c", SERVE, database_url, TOKEN])
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("serving on http://127.0.0.1:"), line
        parts = urlsplit(line.split()[-1])
        assert parts.port and parts.port != 0
        conn = http.client.HTTPConnection("127.0.0.1", parts.port, timeout=30)
        try:
            conn.request("GET", "/api/runs", headers={"Authorization": f"Bearer {TOKEN}"})
            resp = conn.getresponse()
            assert (resp.status, json.loads(resp.read())) == (200, {"runs": []})
        finally:
            conn.close()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert out.strip() == "stopped"
        assert "GET /api/runs" not in err  # no per-request log lines
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _section(page: str, table_id: str) -> str:
    start = page.index(f'<table id="{table_id}">')
    return page[start : page.index("</table>", start)]


def test_the_dashboard_page_shows_retries_step_times_and_signals_as_the_cli_dashboard(
    runtime: Runtime, provider: ProviderProcess, served: Served
) -> None:
    from markupsafe import escape as esc

    from waystone.examples.settlement import settled

    provider.inject("refunds", "transient", times=2)
    done = runtime.start("refund", {**REFUND_INPUT, "amount": "40.00"}).thread_id
    assert runtime.run(done).state == "done"
    runtime.register(settled())
    waits = runtime.start("settled", {**REFUND_INPUT, "amount": "40.00", "order_id": "2001"})
    assert runtime.run(waits.thread_id).state == "waiting"
    queued = runtime.start("refund", {**REFUND_INPUT, "order_id": "1002"}).thread_id
    runtime.signal(queued, "early.<bird>", {"n": 1})

    data = served.request("GET", "/api/dashboard", token=TOKEN).json()
    reply = served.request("GET", "/", token=TOKEN)
    assert reply.status == 200, reply.body
    page = reply.body.decode()
    for tag in ("table", "tbody"):  # every table the page opens is closed once
        assert page.count(f"<{tag}") == page.count(f"</{tag}>"), tag

    assert data["retries_by_step"], data  # the injected faults were retried
    retries = _section(page, "retries")
    for r in data["retries_by_step"]:
        assert f"<td>{esc(r['step'])}</td><td>{r['retries']}</td>" in retries, r
    times = _section(page, "step-times")
    assert any(r["mean_ms"] is not None for r in data["step_times"])
    for r in data["step_times"]:
        mean = "-" if r["mean_ms"] is None else f"{r['mean_ms']:.1f}"
        p95 = "-" if r["p95_ms"] is None else f"{r['p95_ms']:.1f}"
        cells = f"<td>{r['graph']}</td><td>{r['node']}</td><td>{r['n']}</td>"
        assert f"{cells}<td>{mean}</td><td>{p95}</td>" in times, r
    [pending] = data["pending_signals"]
    assert f"<code>{esc(pending['waiting_for'])}</code>" in _section(page, "pending-signals")
    assert waits.thread_id in _section(page, "pending-signals")
    undelivered = _section(page, "undelivered-signals")
    assert "<code>early.&lt;bird&gt;</code>" in undelivered and "<bird>" not in page
    active = _section(page, "active-runs")
    for r in data["active_runs"]:
        assert r["thread_id"] in active and f"s-{r['state']}" in active, r
    assert done not in active
    for state, n in data["counts_by_state"].items():
        assert f'data-state="{state}"><b>{n}</b>' in page, state


def test_a_graphs_pending_interrupts_are_on_its_page_and_the_dashboard(database_url: str) -> None:
    from tests.support.graphs import ask_graph

    with Runtime(Settings(database_url=database_url), graphs={"ask": ask_graph()}) as rt:
        waiting = rt.invoke("ask", {"question": "<b>which</b> colour?"})
        served = Served(rt, TOKEN)
        try:
            page = served.request("GET", f"/runs/{waiting.thread_id}", token=TOKEN)
            board = served.request("GET", "/", token=TOKEN)
        finally:
            served.close()
    assert page.status == 200
    shown = _section(page.body.decode(), "interrupts")
    assert waiting.interrupts[0]["id"] in shown
    assert "&lt;b&gt;which&lt;/b&gt; colour?" in shown and "<b>" not in shown
    assert waiting.thread_id in _section(board.body.decode(), "pending-interrupts")
