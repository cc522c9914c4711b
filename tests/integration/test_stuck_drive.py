"""A drive that is stuck (a tool call that ignores its timeout and never returns) does not
keep its lease alive: past its step budget the heartbeat stops renewing it, the lease
lapses, another process takes the run over, and the stuck thread, if it ever goes on, is
fenced out. A worker does not let a stuck drive take one of its slots for good."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import psycopg
import pytest

from tests.conftest import wait_until
from tests.support.background import Background
from tests.support.inside import parts
from tests.support.notes import bench_storage
from waystone import AgentSpec, LeaseLost, Runtime, Settings
from waystone._checkpointing.lease_guards import lease_ok
from waystone._runs.registry import Run
from waystone.effects.tools import RetryPolicy
from waystone.preset._graph.ports import Ports
from waystone.worker.sync import Worker

# a budget of a few seconds: the model's 2 s and its retry delay, a tool's 0.5 s, a margin
SHORT = {"lease_seconds": 1.0, "model_timeout_s": 2.0, "step_margin_s": 0.5}


class Blocking:
    """A tool call that blocks on its first call until released (its timeout ignored)."""

    def __init__(self) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        self.calls = 0

    def apply(self, args: dict[str, Any], key: str, timeout: float) -> dict[str, Any]:
        self.calls += 1
        if self.calls == 1:
            self.entered.set()
            self.release.wait(timeout=120)  # for ever, as far as the run is concerned
        return {"id": key, "n": args["n"]}


def _agent(blocking: Blocking) -> AgentSpec:
    base = bench_storage.agent(1)
    note = replace(
        base.tools["note"],
        apply=blocking.apply,
        timeout_s=0.5,
        retry=RetryPolicy(base_delay_s=0.01, max_delay_s=0.01),
    )
    return replace(base, name="stuck", tools={"note": note})


def _lease(sql: psycopg.Connection[Any], thread_id: str) -> tuple[Any, ...]:
    row = sql.execute(
        "SELECT state, lease_token, lease_owner FROM waystone.runs WHERE thread_id = %s",
        (thread_id,),
    ).fetchone()
    assert row is not None
    return tuple(row)


def test_the_step_budget_is_the_longest_wait_plus_the_margin() -> None:
    spec = _agent(Blocking())
    ports = Ports(agent=spec, ledger=None, registry=None, model_timeout_s=2.0)  # type: ignore[arg-type]
    assert ports.step_budget(0.5) == pytest.approx(2.0 + 0.8 + 0.5)  # the model's 3 attempts
    slow = replace(ports, tool_timeouts={"note": 30.0}, tool_settle={"note": 10.0})
    assert slow.step_budget(0.5) == pytest.approx(30.0 + 0.01 + 10.0 + 0.5)


@pytest.mark.timeout(120)
def test_a_stuck_drive_lets_its_lease_lapse_and_is_fenced_out(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    blocking = Blocking()
    spec = _agent(blocking)
    settings = Settings(database_url=database_url, **SHORT)  # type: ignore[arg-type]
    with Runtime(settings) as stuck_rt, Runtime(settings) as other_rt:
        stuck_rt.register(spec)
        other_rt.register(spec)
        thread_id = stuck_rt.start(spec.name, {}).thread_id
        driving = Background(lambda: stuck_rt.run(thread_id), daemon=True)
        try:
            assert blocking.entered.wait(timeout=60), "the tool was never called"
            state, first_token, _ = _lease(sql, thread_id)
            assert state == "running"
            taken: list[Run] = []

            def taken_over() -> bool:
                run = parts(other_rt).registry.claim(
                    owner="other", lease_seconds=30, thread_id=thread_id
                )
                if run is not None:
                    taken.append(run)
                return run is not None

            wait_until(taken_over, "another runtime's claim of the stuck run", timeout=60)
            assert _lease(sql, thread_id) == ("running", first_token + 1, "other")
            assert not lease_ok(thread_id, first_token)  # no provider call from the stuck one
            assert other_rt.drive(taken[0]) is not None
            assert _lease(sql, thread_id)[:2] == ("done", first_token + 1)
        finally:
            blocking.release.set()  # the stuck call returns: its next write is refused
            raised = driving.join(timeout=60)
    assert isinstance(raised, LeaseLost), raised
    assert _lease(sql, thread_id)[:2] == ("done", first_token + 1)
    takeovers = sql.execute(
        "SELECT count(*) FROM waystone.run_events WHERE thread_id = %s AND kind = 'lease-takeover'",
        (thread_id,),
    ).fetchone()
    assert takeovers == (1,)


@pytest.mark.timeout(120)
def test_a_stuck_drive_does_not_hold_a_worker_slot(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    """One slot; its first run gets stuck. The worker claims and finishes a second run, and
    the stuck one too once its lease lapses."""
    blocking = Blocking()
    spec, other = _agent(blocking), bench_storage.agent(1)
    settings = Settings(database_url=database_url, **SHORT)  # type: ignore[arg-type]
    with Runtime(settings) as rt:
        rt.register(spec)
        rt.register(other)
        worker = Worker(rt, concurrency=1, poll_seconds=0.2)
        working = threading.Thread(target=worker.run, daemon=True)
        stuck_id = rt.start(spec.name, {}).thread_id
        working.start()
        try:
            assert blocking.entered.wait(timeout=60), "the tool was never called"
            second_id = rt.start(other.name, {}).thread_id
            wait_until(lambda: _lease(sql, second_id)[0] == "done", "the second run", timeout=60)
            wait_until(lambda: _lease(sql, stuck_id)[0] == "done", "the stuck run", timeout=60)
            assert worker.stats.stuck == 1
        finally:
            worker.stop()
            blocking.release.set()
            working.join(timeout=60)
    assert not working.is_alive()
