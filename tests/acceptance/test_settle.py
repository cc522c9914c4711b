"""A person settles an open at-most-once call, and a timeout is an unknown outcome: the
agent of ``test_react_agent_safe`` brought as it is (its booking tool declares nothing),
driven by real ``waystone`` processes against the example provider, whose own records
count the bookings.

Killed with the booking at the provider, the run ends ``needs-human`` naming the call and
its key; ``waystone settle ... --applied`` and ``requeue`` finish it with the one booking,
and the model's next turn sees the call answered. Killed before the request,
``--absent`` has the call made once. A booking whose answer times out after the provider
applied it ends ``needs-human`` with one booking, and the model never sees an error."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from tests.conftest import Cli
from tests.support.outputs import ok
from tests.support.safe_graphs import ORDER, trip, trip_hasty
from tests.support.trips import (
    KILLS,
    approved,
    bookings,
    finished,
    held_booking,
    killed,
    run_events,
)
from waystone.examples.provider import ProviderProcess
from waystone.runtime import Runtime

pytestmark = pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecatedSinceV10")


@pytest.fixture
def trips(runtime: Runtime) -> Iterator[Runtime]:
    """The test's own runtime, which knows the graphs, to read a thread's messages."""
    runtime.register_graph("trip", trip)
    runtime.register_graph("trip_hasty", trip_hasty)
    yield runtime


def _messages(trips: Runtime, graph: str, thread_id: str) -> list[BaseMessage]:
    state = trips.graph(graph).get_state(trips.config(thread_id))
    return list(state.values["messages"])


def _booking_key(trip_cli: Cli, thread_id: str) -> str:
    """The booking's key, as ``history --json`` shows it to a person."""
    effects = ok(trip_cli("history", thread_id, "--json"))["effects"]
    [key] = [e["key"] for e in effects if e["tool"] == "book"]
    return str(key)


def _ledger(database_url: str, thread_id: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(database_url) as conn:
        return conn.execute(
            "SELECT key, status, attempts, receipt FROM waystone.effects WHERE thread_id = %s",
            (thread_id,),
        ).fetchall()


def _needs_human_on_the_booking(trip_cli: Cli, thread_id: str, key: str) -> None:
    """The run shows the call, its key and the commands that settle it, to copy."""
    last = ok(trip_cli("status", thread_id, "--json"))
    assert last["state"] == "needs-human", last
    assert "call_book" in last["reason"] and key in last["reason"]
    assert f"waystone settle {thread_id} {key} --applied" in last["reason"]
    assert f"waystone settle {thread_id} {key} --absent" in last["reason"]
    assert f"waystone requeue {thread_id}" in last["reason"]


def _settle(
    trip_cli: Cli, thread_id: str, key: str, *flags: str
) -> subprocess.CompletedProcess[str]:
    return trip_cli("settle", thread_id, key, *flags, "--by", "ana", "--json")


def _requeued_and_run(trip_cli: Cli, thread_id: str) -> Any:
    ok(trip_cli("requeue", thread_id, "--reason", "settled", "--json"))
    return ok(trip_cli("run", thread_id, "--json"))


def _answered(messages: list[BaseMessage]) -> ToolMessage:
    """The booking call's answer, which the model's last turn saw."""
    [answer] = [m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == "call_book"]
    assert messages.index(answer) < len(messages) - 1
    last = messages[-1]
    assert isinstance(last, AIMessage) and last.content == "done"
    return answer


def test_a_call_made_at_the_provider_is_settled_applied_and_not_made_again(
    trip_cli: Cli, provider: ProviderProcess, database_url: str, trips: Runtime
) -> None:
    thread_id = approved(trip_cli, "trip")
    killed(trip_cli, provider, thread_id, KILLS["at-the-provider"])
    finished(trip_cli, thread_id)
    key = _booking_key(trip_cli, thread_id)
    _needs_human_on_the_booking(trip_cli, thread_id, key)

    settled = _settle(
        trip_cli, thread_id, key, "--applied", "--reason", "the provider shows booking 7001"
    )
    assert ok(settled)["state"] == "needs-human"  # settled, not yet requeued
    done = _requeued_and_run(trip_cli, thread_id)

    assert done["state"] == "done", done
    assert len(bookings(provider)) == 1
    [(_, status, _, receipt)] = _ledger(database_url, thread_id)
    assert status == "confirmed"
    assert receipt == {"settled_by": "ana", "reason": "the provider shows booking 7001"}
    answer = _answered(_messages(trips, "trip", thread_id))
    assert answer.content == "book was made, as recorded by ana: the provider shows booking 7001"
    [event] = [e for e in run_events(trip_cli, thread_id) if e["kind"] == "effect-settled"]
    assert event["actor"] == "ana" and event["evidence"]["key"] == key
    assert "the provider shows booking 7001" in event["reason"]


def test_a_receipt_given_is_what_the_model_is_told(
    trip_cli: Cli, provider: ProviderProcess, trips: Runtime
) -> None:
    thread_id = approved(trip_cli, "trip")
    killed(trip_cli, provider, thread_id, KILLS["after-the-answer"])
    finished(trip_cli, thread_id)
    key = _booking_key(trip_cli, thread_id)
    [booking] = bookings(provider)

    given = json.dumps({"message": {"content": f"booked {booking['id']}", "status": "success"}})
    ok(_settle(trip_cli, thread_id, key, "--applied", "--receipt", given, "--reason", "seen"))
    assert _requeued_and_run(trip_cli, thread_id)["state"] == "done"

    assert len(bookings(provider)) == 1
    answer = _answered(_messages(trips, "trip", thread_id))
    assert answer.content == f"booked {booking['id']}"


def test_a_call_that_never_reached_the_provider_is_settled_absent_and_made_once(
    trip_cli: Cli, provider: ProviderProcess, database_url: str, trips: Runtime
) -> None:
    thread_id = approved(trip_cli, "trip")
    killed(trip_cli, provider, thread_id, KILLS["before-the-request"])
    finished(trip_cli, thread_id)
    key = _booking_key(trip_cli, thread_id)
    _needs_human_on_the_booking(trip_cli, thread_id, key)
    assert bookings(provider) == []

    ok(_settle(trip_cli, thread_id, key, "--absent", "--reason", "no booking for 7001"))
    assert [r[1] for r in _ledger(database_url, thread_id)] == ["absent"]
    done = _requeued_and_run(trip_cli, thread_id)

    assert done["state"] == "done", done
    [booking] = bookings(provider)
    [(_, status, attempts, _)] = _ledger(database_url, thread_id)
    assert (status, attempts) == ("applied", 1)
    assert _answered(_messages(trips, "trip", thread_id)).content == f"booked {booking['id']}"


def _unchanged(database_url: str, thread_id: str) -> tuple[Any, ...]:
    with psycopg.connect(database_url) as conn:
        events = conn.execute(
            "SELECT count(*) FROM waystone.run_events WHERE thread_id = %s", (thread_id,)
        ).fetchone()
        run = conn.execute(
            "SELECT state, lease_token FROM waystone.runs WHERE thread_id = %s", (thread_id,)
        ).fetchone()
    return (_ledger(database_url, thread_id), events, run)


def test_what_cannot_be_settled_is_refused_and_changes_nothing(
    trip_cli: Cli, provider: ProviderProcess, database_url: str
) -> None:
    thread_id = approved(trip_cli, "trip")
    with held_booking(trip_cli, provider, thread_id):
        key = _booking_key(trip_cli, thread_id)
        before = _unchanged(database_url, thread_id)
        running = _settle(trip_cli, thread_id, key, "--applied", "--reason", "seen")
        assert running.returncode == 4, running.stderr
        assert "running" in running.stderr
        assert _unchanged(database_url, thread_id) == before
    finished(trip_cli, thread_id)
    before = _unchanged(database_url, thread_id)

    refused = {  # what: (thread, key, flags, exit code)
        "an unknown key": (thread_id, "no-such-key", ["--absent"], 2),
        "an unknown thread": ("no-such-run", key, ["--absent"], 3),
        "no flag": (thread_id, key, [], 2),
        "both flags": (thread_id, key, ["--applied", "--absent"], 2),
        "a receipt that is no object": (thread_id, key, ["--applied", "--receipt", "[1]"], 2),
        "a receipt with --absent": (thread_id, key, ["--absent", "--receipt", "{}"], 2),
        "a blank reason": (thread_id, key, ["--absent", "--reason", " "], 2),
    }
    for what, (thread, effect, flags, code) in refused.items():
        done = _settle(trip_cli, thread, effect, "--reason", "x", *flags)
        assert done.returncode == code, (what, done.stdout, done.stderr)
    assert _unchanged(database_url, thread_id) == before

    ok(_settle(trip_cli, thread_id, key, "--applied", "--reason", "seen"))
    settled = _unchanged(database_url, thread_id)
    again = _settle(trip_cli, thread_id, key, "--absent", "--reason", "changed my mind")
    assert again.returncode == 4, again.stderr
    assert "confirmed" in again.stderr
    assert _unchanged(database_url, thread_id) == settled
    assert len(bookings(provider)) == 1


def test_a_timeout_after_the_provider_applied_is_an_unknown_outcome_not_an_error(
    trip_cli: Cli, provider: ProviderProcess, database_url: str, trips: Runtime
) -> None:
    """The booking's client gives up on the answer the provider holds back: the request
    may have landed (it did), so the run stops for a person; its ``ToolNode`` hands every
    error to the model, which would book again under a new call id."""
    thread_id = approved(trip_cli, "trip_hasty")
    provider.inject("refunds", "timeout_after_apply", times=1, delay_s=10)
    last = finished(trip_cli, thread_id)

    assert last["state"] == "needs-human", last
    assert len(bookings(provider)) == 1
    [(key, status, attempts, _)] = _ledger(database_url, thread_id)
    assert (status, attempts) == ("unknown", 1)
    assert "ReadTimeout" in " ".join(e["reason"] for e in run_events(trip_cli, thread_id))
    _needs_human_on_the_booking(trip_cli, thread_id, key)
    messages = _messages(trips, "trip_hasty", thread_id)
    assert not [m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == "call_book"]
    assert all(m.status != "error" for m in messages if isinstance(m, ToolMessage))
    assert ORDER["order_id"] in str(messages[-1].tool_calls)  # type: ignore[attr-defined]
