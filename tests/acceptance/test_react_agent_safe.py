"""A LangGraph agent brought as it is, safe by default: ``create_react_agent`` with a
read-only tool and a booking tool that asks for approval with ``interrupt()``, then books
on the example provider (a real process on loopback that records every request).
Approved from another process with ``waystone resume``, the process that books is killed
with SIGKILL at every point of the booking call; ``waystone run`` from a new process
finishes the run. Undeclared, the booking is made at most once and the run is ``done``
or ``needs-human`` showing the call; declared idempotent by key, exactly once and
``done``. The provider's own records count the bookings."""

from __future__ import annotations

import psycopg
import pytest

from tests.conftest import Cli
from tests.support.crashes import crash_points
from tests.support.outputs import ok
from tests.support.safe_graphs import ORDER
from tests.support.trips import KILLS, approved, bookings, finished, killed, run_events
from waystone.examples.provider import ProviderProcess

pytestmark = pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecatedSinceV10")

# undeclared: (bookings, the run's end); only a receipt recorded tells the outcome
AT_MOST_ONCE = {
    "before-the-request": (0, "needs-human"),
    "at-the-provider": (1, "needs-human"),
    "after-the-answer": (1, "needs-human"),
    "after-the-receipt": (1, "done"),
}


def test_the_kill_points_are_crash_points_the_cli_lists() -> None:
    listed = {p["name"]: p for p in crash_points()}
    for point in (k for k in KILLS.values() if k != "held"):
        name, _, tool = point.partition("@")
        assert listed[name]["per_tool"] and tool == "book"


@pytest.mark.parametrize("where", list(KILLS))
def test_an_undeclared_booking_is_made_at_most_once_across_a_kill(
    where: str, trip_cli: Cli, provider: ProviderProcess, database_url: str
) -> None:
    thread_id = approved(trip_cli, "trip")
    killed(trip_cli, provider, thread_id, KILLS[where])
    last = finished(trip_cli, thread_id)

    booked, end = AT_MOST_ONCE[where]
    assert len(bookings(provider)) == booked
    assert last["state"] == end, last
    events = run_events(trip_cli, thread_id)
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


@pytest.mark.parametrize("where", list(KILLS))
def test_a_booking_declared_idempotent_by_key_is_made_exactly_once(
    where: str, trip_cli: Cli, provider: ProviderProcess, database_url: str
) -> None:
    thread_id = approved(trip_cli, "trip_keyed")
    killed(trip_cli, provider, thread_id, KILLS[where])
    last = finished(trip_cli, thread_id)

    assert last["state"] == "done", last
    [booking] = bookings(provider)
    with psycopg.connect(database_url) as conn:
        [(key,)] = conn.execute(
            "SELECT key FROM waystone.effects WHERE thread_id = %s AND tool = 'book'",
            (thread_id,),
        ).fetchall()
    assert booking["idempotency_key"] == key


@pytest.mark.parametrize("graph", ["trip", "trip_keyed"])
def test_an_interrupt_inside_the_tool_ends_done_after_the_approval_with_no_retry(
    graph: str, trip_cli: Cli, provider: ProviderProcess, database_url: str
) -> None:
    thread_id = approved(trip_cli, graph)
    done = ok(trip_cli("run", thread_id, "--json"))

    assert done["state"] == "done", done
    assert len(bookings(provider)) == 1
    kinds = [e["kind"] for e in run_events(trip_cli, thread_id)]
    assert kinds.count("effect-interrupted") == 1  # shown in the history
    assert not {"retry", "retries-exhausted", "needs-human", "unknown-outcome"} & set(kinds)
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT tool, status, attempts FROM waystone.effects WHERE thread_id = %s",
            (thread_id,),
        ).fetchall()
    assert rows == [("book", "applied", 1)]


def test_a_call_of_unknown_outcome_is_never_told_to_the_model_as_an_error(
    trip_cli: Cli, provider: ProviderProcess
) -> None:
    """With ``handle_tool_errors=True`` the model gets every tool error as a message and
    could book again under a new call id: the unknown outcome ends the run instead."""
    thread_id = approved(trip_cli, "trip_handled")
    killed(trip_cli, provider, thread_id, KILLS["after-the-answer"])
    last = finished(trip_cli, thread_id)

    assert last["state"] == "needs-human", last
    assert len(bookings(provider)) == 1
