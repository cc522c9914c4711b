"""Personal data and unstorable input through the LangGraph server API (the official
client and plain HTTP against a real ``waystone api``, a real ``waystone worker`` driving
the runs): card numbers and an IBAN joined to words, emails spaced around their dots or
``@``, planted in a run's input, its state, its resume value and metadata, are stored in no
column in plain form; a NUL anywhere in a request's JSON is refused with 400 by every
route that makes something, and nothing is made."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest
from langgraph_sdk.client import SyncLangGraphClient

from tests.support.api import TOKEN, ApiSetup
from tests.support.chat import say
from tests.support.graphs import ASSIST
from tests.support.scan import row_counts, scan

FORMS = (
    "ref_4111111111111111, id-5555555555554444, 378282246310005_x, "
    "card_4000 0566 5566 5556, name . zelda @ example . com, quokka@example .com, "
    "wombat @example.com, iban_DE89370400440532013000"
)
# every form's digits or name: none may be left in plain form anywhere
NEEDLES = [
    "4111111111111111",
    "5555555555554444",
    "378282246310005",
    "4000 0566 5566 5556",
    "0566 5566 5556",
    "zelda",
    "quokka",
    "wombat",
    "DE89370400440532013000",
]
MARKER = "plain-marker-kiwi"  # not personal data: the scan must find it


@pytest.fixture
def api_setup() -> ApiSetup:
    return ApiSetup({"WAYSTONE_GRAPHS": ASSIST})


@pytest.fixture
def http(api: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=api, headers={"x-api-key": TOKEN}, timeout=60) as client:
        yield client


def test_joined_cards_and_spaced_emails_are_stored_in_no_column(
    lg: SyncLangGraphClient, database_url: str
) -> None:
    thread_id = lg.threads.create(metadata={"note": FORMS, "team": MARKER})["thread_id"]
    done = lg.runs.wait(thread_id, "assist", input=say(f"{MARKER} {FORMS}"), metadata={"n": FORMS})
    assert done["messages"][-1]["content"].startswith(f"echo {MARKER}")
    asked = lg.runs.wait(thread_id, "assist", input=say(f"{FORMS}?"))
    assert asked["__interrupt__"], asked
    answered = lg.runs.wait(thread_id, "assist", command={"resume": FORMS})
    assert answered["messages"][-1]["content"].startswith("a person says:")
    lg.threads.update_state(thread_id, {"messages": [{"role": "user", "content": FORMS}]})
    assert lg.threads.get_state(thread_id)["values"]["messages"][-1]["content"]

    with psycopg.connect(database_url) as conn:
        assert scan(conn, NEEDLES) == []
        assert scan(conn, [MARKER]), "the scan must see what is stored in plain form"
        kinds = {k for (k,) in conn.execute("SELECT kind FROM waystone.vault").fetchall()}
    assert kinds >= {"card", "email", "iban"}


def test_a_nul_in_a_request_is_refused_by_every_route_and_makes_nothing(
    lg: SyncLangGraphClient, http: httpx.Client, sql: psycopg.Connection[Any]
) -> None:
    waiting = lg.threads.create()["thread_id"]
    assert lg.runs.wait(waiting, "assist", input=say("refund?"))["__interrupt__"]
    nul = "a\x00b"
    run = {"assistant_id": "assist", "input": say(nul)}
    new = {**run, "if_not_exists": "create"}
    cron = {"assistant_id": "assist", "schedule": "0 0 * * *", "input": say(nul)}
    refused = {
        "a thread's metadata": ("/threads", {"metadata": {"note": nul}}),
        "a run's input": ("/threads/made-by-a-run/runs", new),
        "a waited run's input": ("/threads/made-by-a-wait/runs/wait", new),
        "a streamed run's input": ("/threads/made-by-a-stream/runs/stream", new),
        "a stateless wait's input": ("/runs/wait", run),
        "a stateless stream's input": ("/runs/stream", run),
        "a run's metadata": (f"/threads/{waiting}/runs", {**run, "metadata": {"n": nul}}),
        "a resume value": (
            f"/threads/{waiting}/runs",
            {"assistant_id": "assist", "command": {"resume": nul}},
        ),
        "a cron's input": ("/runs/crons", cron),
        "a thread's cron's input": (f"/threads/{waiting}/runs/crons", cron),
        "a state update": (f"/threads/{waiting}/state", {"values": say(nul)}),
        "a key": ("/threads", {"metadata": {nul: "x"}}),
    }
    before = row_counts(sql)
    for what, (path, body) in refused.items():
        answer = http.post(path, json=body)
        assert answer.status_code == 400, (what, answer.status_code, answer.text)
        assert "NUL character" in answer.json()["detail"], (what, answer.text)
    # what else the rule refuses: a lone surrogate, NaN (written as the body's raw text)
    for raw, word in [('"\\ud800"', "lone surrogate"), ("NaN", "NaN")]:
        text = '{"assistant_id": "assist", "if_not_exists": "create", "input": ' + raw + "}"
        answer = http.post("/threads/made-by-a-run/runs", content=text.encode())
        assert answer.status_code == 400, (word, answer.status_code, answer.text)
        assert word in answer.json()["detail"], answer.text
    made = {**run, "input": say("x"), "if_not_exists": "create"}
    for path in ("/threads/a%00b/runs", "/threads/a%00b/runs/stream", "/threads/a%00b/runs/wait"):
        answer = http.post(path, json=made)  # a thread id that cannot be stored
        assert answer.status_code == 400, (path, answer.status_code, answer.text)
        assert "the thread id holds U+0000" in answer.json()["detail"], answer.text
    assert row_counts(sql) == before
    assert lg.threads.get(waiting)["status"] == "interrupted"  # its interrupt still waits
    answered = lg.runs.wait(waiting, "assist", command={"resume": "yes"})
    assert answered["messages"][-1]["content"] == "a person says: yes"
