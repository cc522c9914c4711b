"""``waystone serve`` reads a request body only up to its limit (``WAYSTONE_MAX_BODY_BYTES``,
1 MiB by default): a larger one gets 413, saying the limit and how to set it, and changes
nothing."""

from __future__ import annotations

import http.client
import json
from typing import Any

import psycopg
import pytest

from tests.conftest import REFUND_INPUT
from tests.support.rows import signals
from tests.support.served import TOKEN, Served
from waystone import BadInput, Runtime
from waystone.cli.agents import default_agents
from waystone.config import MAX_BODY, Settings


def body_of(size: int) -> str:
    """A JSON object of exactly ``size`` bytes."""
    text = json.dumps({"note": ""})
    return json.dumps({"note": "x" * (size - len(text))})


def test_a_body_over_the_configured_limit_gets_413_and_changes_nothing(
    database_url: str, sql: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WAYSTONE_MAX_BODY_BYTES", "2000")
    with Runtime(Settings.from_env(database_url=database_url), default_agents) as runtime:
        thread_id = runtime.start("refund", REFUND_INPUT).thread_id
        served = Served(runtime, TOKEN)
        try:
            reply = served.request("POST", f"/signals/{thread_id}/note", body_of(2001), token=TOKEN)
            assert reply.status == 413, reply.body
            error = reply.json()["error"]
            assert "2001 bytes" in error and "limit of 2000 bytes" in error, error
            assert "WAYSTONE_MAX_BODY_BYTES" in error
            assert signals(sql, thread_id, "note") == []

            reply = served.request("POST", f"/signals/{thread_id}/note", body_of(2000), token=TOKEN)
            assert reply.status == 200, reply.body
            assert len(signals(sql, thread_id, "note")) == 1
        finally:
            served.close()


def test_a_content_length_that_is_not_an_ascii_number_gets_400(runtime: Runtime) -> None:
    thread_id = runtime.start("refund", REFUND_INPUT).thread_id
    served = Served(runtime, TOKEN)
    try:
        conn = http.client.HTTPConnection(served.host, served.port, timeout=60)
        try:
            conn.putrequest("POST", f"/signals/{thread_id}/note")
            conn.putheader("Authorization", f"Bearer {TOKEN}")
            conn.putheader("Content-Length", "\N{SUPERSCRIPT TWO}")
            conn.endheaders(b"{}")
            resp = conn.getresponse()
            assert resp.status == 400, resp.read()
            assert "Content-Length" in json.loads(resp.read())["error"]
        finally:
            conn.close()
    finally:
        served.close()


def test_a_max_body_setting_that_is_not_a_number_of_bytes_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("WAYSTONE_MAX_BODY_BYTES", raising=False)
    assert Settings.from_env().max_body_bytes == MAX_BODY == 1 << 20
    for bad in ("1MiB", "0", "-5", "1.5"):
        monkeypatch.setenv("WAYSTONE_MAX_BODY_BYTES", bad)
        with pytest.raises(BadInput, match="WAYSTONE_MAX_BODY_BYTES"):
            Settings.from_env()
