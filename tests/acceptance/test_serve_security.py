"""``waystone serve`` under attack, over HTTP against a real ``waystone serve`` process and
in headless Chromium: forged form posts (another origin, another port of the same host,
no or a wrong CSRF token), a session cookie replayed after logout, a foreign Host (DNS
rebinding), anonymous reads of sealed runs, and half-sent requests. A refused request
changes nothing: the assertions read the run's state and history in Postgres."""

from __future__ import annotations

import http.client
import http.server
import json
import re
import select
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import psycopg
import pytest

from tests.conftest import ROOT, Cli
from tests.support.browser import chromium, log_in
from tests.support.rows import changes, signals
from tests.support.served import Reply, send

TOKEN = "t0ken-for-the-serve-security-tests"
KEY = {"WAYSTONE_ENCRYPTION_KEY": "7a" * 32}
ORDER, AMOUNT = "ORD-5521-QZ", "431.17"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
SESSION_COOKIE = "waystone_session"


class Serve:
    """A real ``waystone serve`` process on a free port of 127.0.0.1, and a tiny client
    that sends exactly the headers it is given (Host included)."""

    def __init__(self, cli: Cli, tmp: Path, env: dict[str, str]) -> None:
        self.log = tmp / f"serve-{len(list(tmp.glob('serve-*.log')))}.log"
        with self.log.open("w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "waystone", "serve", "--port", "0"],
                env={**cli.env, "WAYSTONE_API_TOKEN": TOKEN, **KEY, **env},
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
            )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("serving on http://127.0.0.1:"), (line, self.log.read_text())
        self.port = int(urlsplit(line.split()[-1]).port or 0)
        self.origin = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()

    def request(
        self,
        method: str,
        path: str,
        body: str | dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        sent = {"Host": f"127.0.0.1:{self.port}", **(headers or {})}
        data = json.dumps(body) if isinstance(body, dict) else body
        return send(self.port, method, path, data, sent)

    def login(self) -> str:
        """Log in with the token: the session cookie's value."""
        reply = self.request("POST", "/login", urlencode({"token": TOKEN}), FORM)
        assert reply.status == 303, reply.body
        match = re.match(rf"{SESSION_COOKIE}=([^;]*);", reply.headers["set-cookie"])
        assert match is not None
        return match.group(1)

    def csrf(self, cookie: str) -> str:
        """The CSRF token the dashboard's forms carry for this session ("" if none)."""
        page = self.request("GET", "/", headers={"Cookie": f"{SESSION_COOKIE}={cookie}"})
        assert page.status == 200, page.body
        match = re.search(rb'name="csrf" value="([^"]*)"', page.body)
        return match.group(1).decode() if match else ""

    def post_form(
        self, path: str, fields: dict[str, str], cookie: str, headers: dict[str, str]
    ) -> Reply:
        sent = {**FORM, "Cookie": f"{SESSION_COOKIE}={cookie}", **headers}
        return self.request("POST", path, urlencode(fields), sent)


@pytest.fixture
def serve(cli: Cli, tmp_path: Path) -> Iterator[Callable[..., Serve]]:
    started: list[Serve] = []

    def start(**env: str) -> Serve:
        started.append(Serve(cli, tmp_path, env))
        return started[-1]

    yield start
    for s in started:
        s.stop()


@pytest.fixture
def waiting(cli: Cli) -> str:
    """A refund run, sealed at rest, that waits for an approval."""
    data = {"order_id": ORDER, "amount": AMOUNT, "currency": "EUR", "email": "ana@example.com"}
    started = cli("start", "--agent", "refund", "--input", json.dumps(data), "--json", env=KEY)
    assert started.returncode == 0, started.stderr
    thread_id: str = json.loads(started.stdout)["thread_id"]
    ran = cli("run", thread_id, "--json", env=KEY)
    assert json.loads(ran.stdout)["state"] == "waiting", ran.stderr
    return thread_id


def undecided(cli: Cli, sql: psycopg.Connection[Any], thread_id: str) -> bool:
    status = json.loads(cli("status", thread_id, "--json", env=KEY).stdout)
    return (
        status["state"] == "waiting"
        and status["decision_recorded"] is False
        and signals(sql, thread_id, "approval") == []
    )


def decided_by(cli: Cli, thread_id: str) -> list[str]:
    """Who the run's recorded approval decisions are by (the signals are sealed)."""
    history = json.loads(cli("history", thread_id, "--json", env=KEY).stdout)
    return [
        e["reason"] for e in history["events"] if str(e.get("reason", "")).startswith("approve by")
    ]


def test_a_form_post_from_another_origin_with_a_live_session_is_refused(
    cli: Cli, serve: Callable[..., Serve], waiting: str, sql: psycopg.Connection[Any]
) -> None:
    s = serve()
    cookie = s.login()
    fields = {"by": "mallory", "csrf": s.csrf(cookie)}
    path = f"/runs/{quote(waiting, safe='')}/approve"
    before = changes(sql)
    for headers in (
        {"Origin": "http://evil.example"},
        {"Origin": "https://127.0.0.1:" + str(s.port)},  # another scheme
        {"Origin": "null"},
        {"Referer": "http://evil.example/page.html"},  # no Origin: the Referer is checked
        {"Origin": "http://evil.example", "Referer": s.origin + "/"},
        {},  # neither
    ):
        reply = s.post_form(path, fields, cookie, headers)
        assert reply.status == 403, (headers, reply.status, reply.body)
        assert b"was not sent from a page of" in reply.body
    assert changes(sql) == before
    assert undecided(cli, sql, waiting)


def test_a_form_post_from_another_port_of_the_same_host_is_refused(
    cli: Cli, serve: Callable[..., Serve], waiting: str, sql: psycopg.Connection[Any]
) -> None:
    s = serve()
    cookie = s.login()
    fields = {"by": "mallory", "reason": "forged", "csrf": s.csrf(cookie)}
    tid = quote(waiting, safe="")
    before = changes(sql)
    for other in (f"http://127.0.0.1:{s.port + 1}", f"http://localhost:{s.port + 1}"):
        for action in ("approve", "reject"):
            reply = s.post_form(f"/runs/{tid}/{action}", fields, cookie, {"Origin": other})
            assert reply.status == 403, (other, action, reply.status, reply.body)
        reply = s.post_form(f"/runs/{tid}/approve", fields, cookie, {"Referer": other + "/"})
        assert reply.status == 403, (other, reply.body)
    assert changes(sql) == before
    assert undecided(cli, sql, waiting)


def test_a_form_post_without_or_with_a_wrong_csrf_token_is_refused(
    cli: Cli, serve: Callable[..., Serve], waiting: str, sql: psycopg.Connection[Any]
) -> None:
    s = serve()
    cookie = s.login()
    right = s.csrf(cookie)
    other_session = s.csrf(s.login())  # a token of another session
    path = f"/runs/{quote(waiting, safe='')}/approve"
    same_origin = {"Origin": s.origin}
    before = changes(sql)
    for fields in (
        {"by": "mallory"},
        {"by": "mallory", "csrf": ""},
        {"by": "mallory", "csrf": "0" * 64},
        {"by": "mallory", "csrf": right[:-1]},
        {"by": "mallory", "csrf": other_session},
        {"by": "mallory", "csrf": TOKEN},
    ):
        reply = s.post_form(path, fields, cookie, same_origin)
        assert reply.status == 403, (fields, reply.status, reply.body)
        assert b"CSRF token is missing or wrong" in reply.body
    assert changes(sql) == before
    assert undecided(cli, sql, waiting)

    # The same post with the session's token, from the server's own page, is a decision.
    reply = s.post_form(path, {"by": "ana", "csrf": right}, cookie, same_origin)
    assert reply.status == 303, reply.body
    assert len(signals(sql, waiting, "approval")) == 1
    assert decided_by(cli, waiting) == ["approve by ana"]


def test_a_session_cookie_replayed_after_logout_is_refused(
    cli: Cli, serve: Callable[..., Serve], waiting: str, sql: psycopg.Connection[Any]
) -> None:
    s = serve()
    cookie = s.login()
    csrf = s.csrf(cookie)
    same_origin = {"Origin": s.origin}
    out = s.post_form("/logout", {"csrf": csrf}, cookie, same_origin)
    assert out.status == 303 and "Max-Age=0" in out.headers["set-cookie"]

    before = changes(sql)
    tid = quote(waiting, safe="")
    for action, fields in (
        ("approve", {"by": "mallory", "csrf": csrf}),
        ("reject", {"by": "mallory", "reason": "replayed", "csrf": csrf}),
    ):
        reply = s.post_form(f"/runs/{tid}/{action}", fields, cookie, same_origin)
        assert reply.status == 401, (action, reply.status, reply.body)
        assert b"not logged in" in reply.body
    # Nor does the replayed cookie read anything, on this process or on another one.
    assert s.request("GET", "/", headers={"Cookie": f"{SESSION_COOKIE}={cookie}"}).status == 401
    other = serve()
    reply = other.request(
        "GET", f"/api/runs/{tid}/history", headers={"Cookie": f"{SESSION_COOKIE}={cookie}"}
    )
    assert reply.status == 401, reply.body
    assert changes(sql) == before
    assert undecided(cli, sql, waiting)


def test_a_foreign_host_header_is_refused(
    cli: Cli, serve: Callable[..., Serve], waiting: str, sql: psycopg.Connection[Any]
) -> None:
    s = serve()
    tid = quote(waiting, safe="")
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    history = f"/api/runs/{tid}/history"
    before = changes(sql)
    for host in (
        f"evil.example:{s.port}",
        "evil.example",
        f"127.0.0.1:{s.port + 1}",
        f"localhost.evil.example:{s.port}",
        "",
    ):
        for method, path, body in (
            ("GET", history, None),
            ("GET", "/", None),
            ("GET", "/api/runs", None),
            ("POST", f"/api/runs/{tid}/approve", {"by": "mallory"}),
        ):
            reply = s.request(method, path, body, {**bearer, "Host": host})
            assert reply.status == 400, (host, path, reply.status, reply.body)
            assert ORDER.encode() not in reply.body and waiting.encode() not in reply.body
    assert changes(sql) == before
    assert undecided(cli, sql, waiting)

    for host in (f"127.0.0.1:{s.port}", f"localhost:{s.port}", f"[::1]:{s.port}"):
        reply = s.request("GET", history, headers={**bearer, "Host": host})
        assert reply.status == 200, (host, reply.body)
        assert ORDER.encode() in reply.body
    named = serve(WAYSTONE_ALLOWED_HOSTS="evil.example,ops.example:9")
    for host in (f"evil.example:{named.port}", "evil.example", "ops.example:9"):
        reply = named.request("GET", history, headers={**bearer, "Host": host})
        assert reply.status == 200, (host, reply.body)
    assert named.request("GET", history, headers={**bearer, "Host": "ops.example"}).status == 400

    bad = cli("serve", "--port", "0", "--allowed-hosts", "ops.example,not a host!", env=KEY)
    assert bad.returncode == 2, bad.stderr
    assert "'not a host!' is not a host name" in bad.stderr


def test_anonymous_reads_are_refused_when_a_token_is_set(
    cli: Cli, serve: Callable[..., Serve], waiting: str
) -> None:
    s = serve()
    tid = quote(waiting, safe="")
    reads = ["/api/runs", f"/api/runs/{tid}", f"/api/runs/{tid}/history", "/api/dashboard"]
    pages = ["/", f"/runs/{tid}"]
    for path in reads + pages:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Cookie": f"{SESSION_COOKIE}=x"}):
            reply = s.request("GET", path, headers=headers)
            assert reply.status == 401, (path, headers, reply.status, reply.body)
            for secret in (ORDER, AMOUNT, waiting):
                assert secret.encode() not in reply.body, (path, secret)
    assert s.request("GET", "/login").status == 200

    # The token, or a session, reads the runs, opened.
    reply = s.request(
        "GET", f"/api/runs/{tid}/history", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert reply.status == 200 and ORDER.encode() in reply.body and AMOUNT.encode() in reply.body
    cookie = {"Cookie": f"{SESSION_COOKIE}={s.login()}"}
    for path in reads + pages:
        assert s.request("GET", path, headers=cookie).status == 200, path

    # A read-only public dashboard is an explicit choice; changes still need the token.
    public = serve(WAYSTONE_PUBLIC_READS="1")
    for path in reads + pages:
        assert public.request("GET", path).status == 200, path
    reply = public.request("POST", f"/api/runs/{tid}/approve", {"by": "mallory"})
    assert reply.status == 401


def closed_by_server(sock: socket.socket, drip: bytes = b"", limit: int = 600) -> bool:
    """Wait (0.1 s at a time, sending a byte of ``drip`` each time when given) until the
    server closes the connection; False when it still holds it after ``limit`` waits."""
    for i in range(limit):
        readable, _, _ = select.select([sock], [], [], 0.1)
        if readable:
            try:
                while sock.recv(4096):
                    pass
            except ConnectionResetError:
                pass
            return True
        if drip:
            try:
                sock.sendall(drip[i % len(drip) : i % len(drip) + 1])
            except (BrokenPipeError, ConnectionResetError):
                return True
    return False


def test_a_half_sent_request_is_closed_by_the_server(
    serve: Callable[..., Serve], waiting: str, sql: psycopg.Connection[Any]
) -> None:
    s = serve(WAYSTONE_READ_TIMEOUT="1")
    host = f"Host: 127.0.0.1:{s.port}\r\n".encode()
    tid = quote(waiting, safe="").encode()
    half_sent = [
        b"GET /api/runs HTTP/1.1\r\n" + host,  # the headers never end
        b"POST /api/runs/"
        + tid
        + b"/approve HTTP/1.1\r\n"
        + host
        + b"Authorization: Bearer "
        + TOKEN.encode()
        + b'\r\nContent-Length: 100\r\n\r\n{"by": ',  # nor the body
        b"GET /api/ru",  # nor the request line
        b"",  # a connection that sends nothing
    ]
    before = changes(sql)
    socks = [socket.create_connection(("127.0.0.1", s.port)) for _ in range(10 * len(half_sent))]
    try:
        for i, sock in enumerate(socks):
            sock.sendall(half_sent[i % len(half_sent)])
        for i, sock in enumerate(socks):
            assert closed_by_server(sock), half_sent[i % len(half_sent)]
        # A slowloris: headers sent a byte at a time, each in time, never finished.
        slow = socket.create_connection(("127.0.0.1", s.port))
        socks.append(slow)
        slow.sendall(b"GET /api/runs HTTP/1.1\r\n" + host)
        assert closed_by_server(slow, drip=b"X-Slow: " + b"a" * 64)
    finally:
        for sock in socks:
            sock.close()
    assert changes(sql) == before
    reply = s.request("GET", "/api/runs", headers={"Authorization": f"Bearer {TOKEN}"})
    assert reply.status == 200, reply.body  # and it still serves everyone else


ATTACK = """<!doctype html><html><body>
<form id="f" method="post" action="{action}">
<input name="by" value="mallory"><input name="comment" value="forged">
</form><script>document.getElementById("f").submit()</script></body></html>"""


def test_a_page_on_another_port_cannot_approve_for_a_logged_in_operator(
    cli: Cli, serve: Callable[..., Serve], waiting: str, sql: psycopg.Connection[Any]
) -> None:
    s = serve()
    attack = ATTACK.format(action=f"{s.origin}/runs/{quote(waiting, safe='')}/approve").encode()

    class Attacker(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(attack)))
            self.end_headers()
            self.wfile.write(attack)

        def log_message(self, format: str, *args: Any) -> None:
            del format, args

    evil = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Attacker)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    evil_url = f"http://127.0.0.1:{evil.server_address[1]}/"
    approval = f'.approval[data-thread-id="{waiting}"]'
    try:
        with chromium() as browser:
            context = browser.new_context()
            page = context.new_page()
            log_in(page, s.origin, TOKEN)
            assert page.locator(approval).count() == 1

            before = changes(sql)
            forged = context.new_page()
            with forged.expect_response(lambda r: r.request.method == "POST") as posted:
                forged.goto(evil_url)
            assert posted.value.request.all_headers().get("cookie", "").startswith(SESSION_COOKIE)
            assert posted.value.status == 403
            assert changes(sql) == before
            assert undecided(cli, sql, waiting)

            # The operator's own click on the dashboard still decides.
            page.reload()
            with page.expect_response(lambda r: r.request.method == "POST") as mine:
                page.locator(f"{approval} button.approve").click()
            assert mine.value.status == 303
            assert len(signals(sql, waiting, "approval")) == 1
            assert decided_by(cli, waiting) == ["approve by web"]
            context.close()
    finally:
        evil.shutdown()
        evil.server_close()
