"""A LangGraph agent brought as it is, safe by default: ``create_react_agent`` with a
read-only tool and a booking tool that asks for approval with ``interrupt()``, then books
on the example provider (a real process on loopback that records every request).
Approved from another process with ``waystone resume``, the process that books is killed
with SIGKILL at every point of the booking call; ``waystone run`` from a new process
finishes the run. Undeclared, the booking is made at most once and the run is ``done``
or ``needs-human`` showing the call; declared idempotent by key, exactly once and
``done``. The provider's own records count the bookings."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from tests.conftest import ROOT, Cli, wait_until
from tests.support.crashes import crash_points
from tests.support.safe_graphs import GRAPHS, ORDER
from waystone.examples.provider import ProviderProcess

# where the booking process dies: a crash point, or "held" (killed by the test while the
# provider holds its answer: the booking is made, the answer never comes back)
KILLS = {
    "before-the-request": "execute:after-intent@book",
    "at-the-provider": "held",
    "after-the-answer": "execute:after-apply@book",
    "after-the-receipt": "execute:after-receipt@book",
}
# undeclared: (bookings, the run's end); only a receipt recorded tells the outcome
AT_MOST_ONCE = {
    "before-the-request": (0, "needs-human"),
    "at-the-provider": (1, "needs-human"),
    "after-the-answer": (1, "needs-human"),
    "after-the-receipt": (1, "done"),
}
SAID = {"messages": [{"role": "user", "content": "book order 7001"}]}


def test_the_kill_points_are_crash_points_the_cli_lists() -> None:
    listed = {p["name"]: p for p in crash_points()}
    for point in (k for k in KILLS.values() if k != "held"):
        name, _, tool = point.partition("@")
        assert listed[name]["per_tool"] and tool == "book"


@pytest.fixture
def trip_cli(cli: Cli) -> Cli:
    cli.env["WAYSTONE_GRAPHS"] = GRAPHS
    return cli


def _json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _bookings(provider: ProviderProcess) -> list[dict[str, Any]]:
    return [r for r in provider.ledger()["refunds"] if r["order_id"] == ORDER["order_id"]]


def _approved(trip_cli: Cli, graph: str) -> str:
    """A run of ``graph`` that waits on the booking's approval, approved by another
    process; its thread id."""
    thread_id = str(
        _json(trip_cli("start", "--graph", graph, "--input", json.dumps(SAID), "--json"))[
            "thread_id"
        ]
    )
    waiting = _json(trip_cli("run", thread_id, "--json"))
    assert waiting["state"] == "waiting", waiting
    assert [i["value"]["approve"] for i in waiting["interrupts"]] == ["book"]
    _json(trip_cli("resume", thread_id, "--value", '"yes"', "--json"))
    return thread_id


def _killed(trip_cli: Cli, provider: ProviderProcess, thread_id: str, kill: str) -> None:
    """The approved run driven by a process killed with SIGKILL at ``kill``."""
    if kill != "held":
        died = trip_cli("run", thread_id, "--json", env={"WAYSTONE_CRASH_AT": kill})
        assert died.returncode == -9, f"{kill} was never reached: {died.stdout}{died.stderr}"
        return
    with held_booking(trip_cli, provider, thread_id):
        pass


@contextmanager
def held_booking(trip_cli: Cli, provider: ProviderProcess, thread_id: str) -> Iterator[None]:
    """The approved run driven until the provider has made the booking and holds its
    answer; the driving process is SIGKILLed on the way out."""
    provider.inject("refunds", "timeout_after_apply", times=1, delay_s=120)
    booking = subprocess.Popen(
        [sys.executable, "-m", "waystone", "run", thread_id, "--json"],
        env=trip_cli.env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: len(_bookings(provider)) == 1, "the provider to make the booking")
        yield
    finally:
        booking.send_signal(signal.SIGKILL)
        booking.wait()


def _finished(trip_cli: Cli, thread_id: str) -> Any:
    """The run driven on by ``waystone run`` from a new process, as ``status`` shows it
    (``run`` exits 7 for a run that ends ``needs-human``)."""
    ran = trip_cli("run", thread_id, "--json")
    assert ran.returncode in (0, 7), ran.stderr
    return _json(trip_cli("status", thread_id, "--json"))


def _events(trip_cli: Cli, thread_id: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = _json(trip_cli("history", thread_id, "--json"))["events"]
    return events


@pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecatedSinceV10")
@pytest.mark.parametrize("where", list(KILLS))
def test_an_undeclared_booking_is_made_at_most_once_across_a_kill(
    where: str, trip_cli: Cli, provider: ProviderProcess, database_url: str
) -> None:
    thread_id = _approved(trip_cli, "trip")
    _killed(trip_cli, provider, thread_id, KILLS[where])
    last = _finished(trip_cli, thread_id)

    booked, end = AT_MOST_ONCE[where]
    assert len(_bookings(provider)) == booked
    assert last["state"] == end, last
    events = _events(trip_cli, thread_id)
    if end == "needs-human":
        [shown] = [e for e in events if e["kind"] == "needs-human" and e["evidence"].get("tool")]
        assert shown["evidence"]["tool"] == "book"
        assert shown["evidence"]["tool_call_id"] == "call_book"
        assert shown["evidence"]["args"] == ORDER
        assert "book" in last["reason"] and "call_book" in last["reason"]
    with psycopg.connect(database_url) as conn:
        effects = conn.execute(
            "SELECT tool, attempts FROM waystone.effects WHERE thread_id = %s", (thread_id,)
        ).fetchall()
    assert effects == [("book", 1)]  # the read-only quote is no effect; book never retried
    assert not {"retry", "retries-exhausted"} & {e["kind"] for e in events}


@pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecatedSinceV10")
@pytest.mark.parametrize("where", list(KILLS))
def test_a_booking_declared_idempotent_by_key_is_made_exactly_once(
    where: str, trip_cli: Cli, provider: ProviderProcess, database_url: str
) -> None:
    thread_id = _approved(trip_cli, "trip_keyed")
    _killed(trip_cli, provider, thread_id, KILLS[where])
    last = _finished(trip_cli, thread_id)

    assert last["state"] == "done", last
    [booking] = _bookings(provider)
    with psycopg.connect(database_url) as conn:
        [(key,)] = conn.execute(
            "SELECT key FROM waystone.effects WHERE thread_id = %s AND tool = 'book'",
            (thread_id,),
        ).fetchall()
    assert booking["idempotency_key"] == key


@pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecatedSinceV10")
@pytest.mark.parametrize("graph", ["trip", "trip_keyed"])
def test_an_interrupt_inside_the_tool_ends_done_after_the_approval_with_no_retry(
    graph: str, trip_cli: Cli, provider: ProviderProcess, database_url: str
) -> None:
    thread_id = _approved(trip_cli, graph)
    done = _json(trip_cli("run", thread_id, "--json"))

    assert done["state"] == "done", done
    assert len(_bookings(provider)) == 1
    kinds = [e["kind"] for e in _events(trip_cli, thread_id)]
    assert kinds.count("effect-interrupted") == 1  # shown in the history
    assert not {"retry", "retries-exhausted", "needs-human", "unknown-outcome"} & set(kinds)
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT tool, status, attempts FROM waystone.effects WHERE thread_id = %s",
            (thread_id,),
        ).fetchall()
    assert rows == [("book", "applied", 1)]


@pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecatedSinceV10")
def test_a_call_of_unknown_outcome_is_never_told_to_the_model_as_an_error(
    trip_cli: Cli, provider: ProviderProcess
) -> None:
    """With ``handle_tool_errors=True`` the model gets every tool error as a message and
    could book again under a new call id: the unknown outcome ends the run instead."""
    thread_id = _approved(trip_cli, "trip_handled")
    _killed(trip_cli, provider, thread_id, KILLS["after-the-answer"])
    last = _finished(trip_cli, thread_id)

    assert last["state"] == "needs-human", last
    assert len(_bookings(provider)) == 1
