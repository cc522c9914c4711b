"""What an approver sees of a pending action on ``waystone serve``, over HTTP against a
real process: an authenticated one (a session or the bearer token) sees the real values
the action reaches, revealed for the response only; an anonymous one (public reads, or a
server without a token) sees only their tokens; nothing revealed is ever stored."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import psycopg

from tests.acceptance.test_serve_security import KEY, SESSION_COOKIE, TOKEN, Serve, serve
from tests.conftest import Cli
from tests.support.scan import scan

__all__ = ["serve"]  # the fixture

AGENT = {"WAYSTONE_AGENTS": "tests.support.notify_approval:build", **KEY}
EMAIL = "mira.kowalczyk@example.org"


def waiting_for_a_message(cli: Cli) -> tuple[str, str]:
    """A run waiting for approval of a message to EMAIL: its thread id and EMAIL's token."""
    started = cli(
        "start", "--agent", "notify-approval", "--input", json.dumps({"email": EMAIL}),
        "--json", env=AGENT,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    thread_id: str = json.loads(started.stdout)["thread_id"]
    ran = json.loads(cli("run", thread_id, "--json", env=AGENT).stdout)
    assert ran["state"] == "waiting", ran
    token: str = ran["pending_approval"]["args"]["to"]
    assert re.fullmatch(r"<pii:email:[a-p]{20}>", token), token
    return thread_id, token


def test_an_authenticated_approver_sees_the_real_email_an_anonymous_one_its_token(
    cli: Cli, serve: Callable[..., Serve], sql: psycopg.Connection[Any]
) -> None:
    thread_id, token = waiting_for_a_message(cli)
    shown_token = token.replace("<", "&lt;").replace(">", "&gt;").encode()
    tid = quote(thread_id, safe="")

    s = serve(**AGENT)
    cookie = {"Cookie": f"{SESSION_COOKIE}={s.login()}"}
    for path in ("/", f"/runs/{tid}"):
        reply = s.request("GET", path, headers=cookie)
        assert reply.status == 200, reply.body
        assert EMAIL.encode() in reply.body and shown_token not in reply.body, path
    api = s.request("GET", f"/api/runs/{tid}", headers={"Authorization": f"Bearer {TOKEN}"})
    assert json.loads(api.body)["pending_approval"]["args"]["to"] == EMAIL

    public = serve(WAYSTONE_PUBLIC_READS="1", **AGENT)
    read_only = serve(WAYSTONE_API_TOKEN="", **AGENT)
    for server in (public, read_only):
        for path in ("/", f"/runs/{tid}"):
            reply = server.request("GET", path)
            assert reply.status == 200, reply.body
            assert EMAIL.encode() not in reply.body and shown_token in reply.body, path
        api = server.request("GET", f"/api/runs/{tid}")
        assert json.loads(api.body)["pending_approval"]["args"]["to"] == token
    # A wrong token on a public server is anonymous too.
    wrong = public.request("GET", f"/runs/{tid}", headers={"Authorization": "Bearer wrong"})
    assert EMAIL.encode() not in wrong.body

    for server in (s, public, read_only):
        server.stop()
        assert EMAIL not in server.log.read_text()
    assert scan(sql, [EMAIL]) == []


def test_status_shows_the_operator_the_real_email_and_json_keeps_the_token(cli: Cli) -> None:
    thread_id, token = waiting_for_a_message(cli)
    human = cli("status", thread_id, env=AGENT)
    assert human.returncode == 0, human.stderr
    assert EMAIL in human.stdout and token not in human.stdout
    as_json = json.loads(cli("status", thread_id, "--json", env=AGENT).stdout)
    assert as_json["pending_approval"]["args"]["to"] == token
