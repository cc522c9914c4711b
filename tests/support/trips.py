"""The trip agent of ``tests.support.safe_graphs`` driven through the real ``waystone``
command: a run approved from another process, the booking process killed at a point of
its call, the run finished by a new process; and the provider's own bookings."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.conftest import ROOT, Cli, wait_until
from tests.support.outputs import ok
from tests.support.safe_graphs import ORDER
from waystone.examples.provider import ProviderProcess

# where the booking process dies: a crash point, or "held" (killed by the test while the
# provider holds its answer: the booking is made, the answer never comes back)
KILLS = {
    "before-the-request": "execute:after-intent@book",
    "at-the-provider": "held",
    "after-the-answer": "execute:after-apply@book",
    "after-the-receipt": "execute:after-receipt@book",
}
SAID = {"messages": [{"role": "user", "content": "book order 7001"}]}


def bookings(provider: ProviderProcess) -> list[dict[str, Any]]:
    return [r for r in provider.ledger()["refunds"] if r["order_id"] == ORDER["order_id"]]


def approved(trip_cli: Cli, graph: str) -> str:
    """A run of ``graph`` that waits on the booking's approval, approved by another
    process; its thread id."""
    started = ok(trip_cli("start", "--graph", graph, "--input", json.dumps(SAID), "--json"))
    thread_id = str(started["thread_id"])
    waiting = ok(trip_cli("run", thread_id, "--json"))
    assert waiting["state"] == "waiting", waiting
    assert [i["value"]["approve"] for i in waiting["interrupts"]] == ["book"]
    ok(trip_cli("resume", thread_id, "--value", '"yes"', "--json"))
    return thread_id


def killed(trip_cli: Cli, provider: ProviderProcess, thread_id: str, kill: str) -> None:
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
        wait_until(lambda: len(bookings(provider)) == 1, "the provider to make the booking")
        yield
    finally:
        booking.send_signal(signal.SIGKILL)
        booking.wait()


def finished(trip_cli: Cli, thread_id: str) -> Any:
    """The run driven on by ``waystone run`` from a new process, as ``status`` shows it
    (``run`` exits 7 for a run that ends ``needs-human``)."""
    ran = trip_cli("run", thread_id, "--json")
    assert ran.returncode in (0, 7), ran.stderr
    return ok(trip_cli("status", thread_id, "--json"))


def run_events(trip_cli: Cli, thread_id: str) -> list[dict[str, Any]]:
    shown: list[dict[str, Any]] = ok(trip_cli("history", thread_id, "--json"))["events"]
    return shown
