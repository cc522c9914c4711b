"""``waystone worker --until-idle`` after a worker was killed with a run in hand: it drives
the run at once when the dead worker ran on this machine, else waits for its lease to
expire and drives it, or says when a lease too long to wait for expires. Real worker
processes, SIGKILLed; assertions on Postgres and the provider."""

from __future__ import annotations

import signal
import subprocess
import sys
from typing import Any

import psycopg
import pytest

from tests.acceptance.conftest import Workers
from tests.acceptance.test_workers import SMALL
from tests.conftest import ROOT, Cli, wait_until
from tests.support.rows import one, run_state
from waystone import Runtime
from waystone.examples.provider import ProviderProcess

KILLED_AT = {"WAYSTONE_CRASH_AT": "execute:after-intent"}  # SIGKILLs itself, lease in hand
ELSEWHERE = "other-host:4026531836:4242:0badf00d"  # a worker's name on another machine


def killed_holding(
    workers: Workers, sql: psycopg.Connection[Any], lease_s: str, elsewhere: bool = False
) -> None:
    """A worker that took the run and was SIGKILLed in the middle of it; ``elsewhere``:
    its lease named as a worker of another machine names it (no process here to ask)."""
    killed = workers.spawn("--lease-seconds", lease_s, env=KILLED_AT)
    assert killed.wait(timeout=90) == -signal.SIGKILL, workers.output(killed)
    if elsewhere:
        sql.execute("UPDATE waystone.runs SET lease_owner = %s", (ELSEWHERE,))
    state = "SELECT state, lease_expires_at > clock_timestamp() FROM waystone.runs"
    assert sql.execute(state).fetchall() == [("running", True)]


# A worker process that claims two runs and is SIGKILLed with both leases in hand.
CLAIMS_TWO_THEN_DIES = """
import os, signal
from waystone import Runtime
from waystone.cli.agents import default_agents
from waystone.config import Settings
with Runtime(Settings.from_env(lease_seconds=900), default_agents) as rt:
    assert rt.claim() is not None and rt.claim() is not None
    os.kill(os.getpid(), signal.SIGKILL)
"""


def takeover(sql: psycopg.Connection[Any], thread_id: str) -> Any:
    return one(
        sql,
        "SELECT reason FROM waystone.run_events WHERE thread_id = %s AND kind = 'lease-takeover'",
        thread_id,
    )


@pytest.mark.parametrize("kind", [[], ["--async"]], ids=["threads", "async"])
def test_until_idle_drives_at_once_a_run_whose_local_worker_was_killed(
    kind: list[str],
    runtime: Runtime,
    provider: ProviderProcess,
    workers: Workers,
    sql: psycopg.Connection[Any],
) -> None:
    thread_id = runtime.start("refund", SMALL).thread_id
    killed_holding(workers, sql, "900")  # a lease it would not wait for
    rescuer = workers.spawn("--until-idle", *kind)
    assert rescuer.wait(timeout=120) == 0, workers.output(rescuer)
    assert f"--until-idle: taking run {thread_id} now" in workers.output(rescuer)
    assert workers.summary(rescuer)["driven"] == 1
    assert run_state(sql, thread_id) == "done"
    assert takeover(sql, thread_id) == "lease taken over: previous owner died"
    assert len(provider.ledger()["refunds"]) == 1


@pytest.mark.parametrize("kind", [[], ["--async"]], ids=["threads", "async"])
def test_until_idle_waits_for_the_lease_of_a_killed_worker_elsewhere_then_drives_the_run(
    kind: list[str],
    runtime: Runtime,
    provider: ProviderProcess,
    workers: Workers,
    sql: psycopg.Connection[Any],
) -> None:
    thread_id = runtime.start("refund", SMALL).thread_id
    killed_holding(workers, sql, "15", elsewhere=True)
    rescuer = workers.spawn("--until-idle", *kind)
    wait_until(
        lambda: f"--until-idle: waiting for run {thread_id}" in workers.output(rescuer),
        "the rescuer saying which lease it waits for",
    )
    assert rescuer.wait(timeout=120) == 0, workers.output(rescuer)
    assert workers.summary(rescuer)["driven"] == 1
    assert run_state(sql, thread_id) == "done"
    assert takeover(sql, thread_id) == "lease taken over: lease expired"
    assert len(provider.ledger()["refunds"]) == 1


def test_until_idle_says_when_a_lease_too_long_to_wait_for_expires(
    runtime: Runtime, provider: ProviderProcess, workers: Workers, sql: psycopg.Connection[Any]
) -> None:
    thread_id = runtime.start("refund", SMALL).thread_id
    killed_holding(workers, sql, "900", elsewhere=True)
    expires = one(sql, "SELECT lease_expires_at FROM waystone.runs WHERE thread_id = %s", thread_id)
    idle = workers.spawn("--until-idle")
    assert idle.wait(timeout=90) == 0, workers.output(idle)
    said = workers.output(idle)
    assert f"--until-idle: not waiting for run {thread_id}" in said, said
    assert "held by other-host:" in said and f"expires at {expires.isoformat()}" in said, said
    assert workers.summary(idle)["driven"] == 0
    assert run_state(sql, thread_id) == "running"
    assert provider.ledger()["refunds"] == []


@pytest.mark.parametrize("kind", [[], ["--async"]], ids=["threads", "async"])
def test_until_idle_drives_at_once_every_run_a_killed_local_worker_left(
    kind: list[str],
    runtime: Runtime,
    provider: ProviderProcess,
    workers: Workers,
    cli: Cli,
    sql: psycopg.Connection[Any],
) -> None:
    threads = [runtime.start("refund", {**SMALL, "order_id": f"A-{n}"}).thread_id for n in (1, 2)]
    killed = subprocess.run(
        [sys.executable, "-c", CLAIMS_TWO_THEN_DIES], env=cli.env, cwd=ROOT, check=False
    )
    assert killed.returncode == -signal.SIGKILL
    held = "SELECT state, lease_expires_at > now() + interval '60 seconds' FROM waystone.runs"
    assert sql.execute(held).fetchall() == [("running", True)] * 2
    rescuer = workers.spawn("--until-idle", *kind)
    assert rescuer.wait(timeout=120) == 0, workers.output(rescuer)
    said = workers.output(rescuer)
    for thread_id in threads:
        assert f"--until-idle: taking run {thread_id} now" in said, said
        assert run_state(sql, thread_id) == "done"
        # taken from the dead owner, not after its lease expired
        assert takeover(sql, thread_id) == "lease taken over: previous owner died"
    assert workers.summary(rescuer)["driven"] == 2
    assert "<pii:" not in said, said  # the dead worker's name is shown as it is
    assert len(provider.ledger()["refunds"]) == 2
