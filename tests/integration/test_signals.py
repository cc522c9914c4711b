"""A signal answers one wait: a run that waits twice for the same signal name needs two
deliveries, and each wait gets its own payload. A wait's deadline belongs to its wait: a
run taken over after it passed still times out, and a later wait never inherits it."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from pydantic import BaseModel

from tests.conftest import wait_until
from tests.support.inside import parts
from waystone import AgentSpec, Check, CheckResult, Rule, RulePolicy, Runtime, Settings, Tool
from waystone._runs.waits import SignalWait
from waystone.preset.proposers import Proposal, ScriptedProposer


class Pay(BaseModel):
    n: int


def _agent(timeout_s: float = 3600) -> AgentSpec:
    tool = Tool(
        name="pay",
        description="a payment confirmed by the provider's webhook",
        args_model=Pay,
        apply=lambda args, key, timeout: {"id": key, "n": args["n"]},
        confirm=lambda args, key, receipt, timeout: receipt,
        idempotent_by_key=True,
        await_signal=SignalWait("payment.settled", timeout_s=timeout_s, on_timeout="failed"),
    )

    def both(_input: dict[str, Any], completed: list[dict[str, Any]]) -> CheckResult:
        return CheckResult(len(completed) == 2, f"{len(completed)} of 2 settled")

    return AgentSpec(
        name="twice",
        tools={"pay": tool},
        policy=RulePolicy([Rule("allow", "test payments")]),
        proposer=ScriptedProposer(
            lambda _i: [Proposal("pay", {"n": 1}), Proposal("pay", {"n": 2})]
        ),
        checks=[Check("both", both)],
    )


def test_one_signal_answers_one_wait(database_url: str) -> None:
    with Runtime(Settings(database_url=database_url), agents={"twice": _agent()}) as rt:
        thread_id = rt.start("twice", {}).thread_id
        assert rt.run(thread_id).state == "waiting"
        rt.signal(thread_id, "payment.settled", {"settlement": "S-1"})
        second = rt.run(thread_id)
        assert (second.state, second.waiting_for) == ("waiting", "payment.settled")
        rt.signal(thread_id, "payment.settled", {"settlement": "S-2"})
        assert rt.run(thread_id).state == "done"
        completed = rt.graph("twice").get_state(rt.config(thread_id)).values["completed"]
    assert [c["confirmation"]["signal"]["settlement"] for c in completed] == ["S-1", "S-2"]


def _undelivered(sql: psycopg.Connection[Any], thread_id: str) -> list[str]:
    rows = sql.execute(
        "SELECT name FROM waystone.signals WHERE thread_id = %s AND consumed_at IS NULL "
        "ORDER BY id",
        (thread_id,),
    ).fetchall()
    return [str(r[0]) for r in rows]


def test_a_done_run_spends_the_signals_it_never_used(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    """A done run takes no more signals, so those it never used (a third delivery for two
    waits, a name it never waits for) are spent as it ends: left undelivered, they would
    stay so for good, listed by the dashboard and read by every claim. A run that fails
    (here its wait timed out) has them settled, and back if it is requeued."""
    with Runtime(Settings(database_url=database_url), agents={"twice": _agent()}) as rt:
        thread_id = rt.start("twice", {}).thread_id
        rt.signal(thread_id, "payment.refunded", {})
        assert rt.run(thread_id).state == "waiting"
        for settlement in ("S-1", "S-2", "S-3"):
            rt.signal(thread_id, "payment.settled", {"settlement": settlement})
        assert _undelivered(sql, thread_id) == ["payment.refunded", *["payment.settled"] * 3]
        assert rt.run(thread_id).state == "done"
        assert _undelivered(sql, thread_id) == []
    with Runtime(Settings(database_url=database_url), agents={"twice": _agent(1)}) as rt:
        thread_id = rt.start("twice", {}).thread_id
        rt.signal(thread_id, "payment.refunded", {})
        assert rt.run(thread_id).state == "waiting"
        due = "SELECT wake_at <= clock_timestamp() FROM waystone.runs WHERE thread_id = %s"
        wait_until(lambda: bool((sql.execute(due, (thread_id,)).fetchone() or [False])[0]), "due")
        assert rt.run(thread_id).state == "failed"
        assert _undelivered(sql, thread_id) == []
        [settled] = [e for e in rt.history(thread_id)["events"] if e["kind"] == "signals-settled"]
        assert [s["name"] for s in settled["evidence"]["signals"]] == ["payment.refunded"]
        rt.requeue(thread_id, by="ops", reason="the refund came late")
        assert _undelivered(sql, thread_id) == ["payment.refunded"]


def _waits(sql: psycopg.Connection[Any], thread_id: str) -> int:
    query = (
        "SELECT count(*) FROM waystone.run_events WHERE thread_id = %s "
        "AND kind = 'transition' AND to_state = 'waiting'"
    )
    row = sql.execute(query, (thread_id,)).fetchone()
    assert row is not None
    return int(row[0])


def test_a_run_taken_over_after_its_deadline_still_times_out(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    """A worker takes the run from its overdue wait and hands the lease back before it
    resumes it (an outage, a drain): the next claim sees a running run, and still times the
    wait out, without a second wait or a fresh deadline."""
    with Runtime(Settings(database_url=database_url), agents={"twice": _agent(1)}) as rt:
        thread_id = rt.start("twice", {}).thread_id
        assert rt.run(thread_id).state == "waiting"
        due = "SELECT wake_at <= clock_timestamp() FROM waystone.runs WHERE thread_id = %s"
        wait_until(lambda: bool((sql.execute(due, (thread_id,)).fetchone() or [False])[0]), "due")
        taken = parts(rt).registry.claim(owner="gone", lease_seconds=30, thread_id=thread_id)
        assert taken is not None and taken.deadline_passed
        assert parts(rt).registry.release(thread_id, taken.lease_token)
        ended = rt.run(thread_id)
    assert (ended.state, ended.reason) == (
        "failed",
        "no 'payment.settled' signal within 1s for pay",
    )
    assert _waits(sql, thread_id) == 1


def test_a_later_wait_never_inherits_an_earlier_deadline(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    """A run due by a deadline that belongs to another wait (one it has moved past) is not
    timed out: it waits again, with its own wait's deadline."""
    with Runtime(Settings(database_url=database_url), agents={"twice": _agent()}) as rt:
        thread_id = _due(rt, sql, wait_id="an-earlier-wait")
        again = rt.run(thread_id)
    assert again.state == "waiting"
    row = sql.execute(
        "SELECT extract(epoch FROM wake_at - clock_timestamp()), wait_id "
        "FROM waystone.runs WHERE thread_id = %s",
        (thread_id,),
    ).fetchone()
    assert row is not None and 3500 < float(row[0]) <= 3600
    interrupt = _interrupt(sql, thread_id)
    assert row[1] == interrupt and interrupt != "an-earlier-wait"


def _due(rt: Runtime, sql: psycopg.Connection[Any], wait_id: str | None) -> str:
    """A new run of the "twice" agent, waiting, with its deadline passed and recorded as
    ``wait_id``'s; its thread id."""
    thread_id = rt.start("twice", {}).thread_id
    assert rt.run(thread_id).state == "waiting"
    sql.execute(
        "UPDATE waystone.runs SET wake_at = clock_timestamp() - interval '1 s', "
        "wait_id = %s WHERE thread_id = %s",
        (wait_id, thread_id),
    )
    return thread_id


def _interrupt(sql: psycopg.Connection[Any], thread_id: str) -> str:
    """The interrupt the run waits on, as its waiting transition recorded it."""
    row = sql.execute(
        "SELECT evidence->>'interrupt_id' FROM waystone.runs WHERE thread_id = %s", (thread_id,)
    ).fetchone()
    assert row is not None and row[0]
    return str(row[0])


def test_a_wait_from_before_waits_were_named_still_times_out(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    """A run that was waiting when the database was upgraded (its deadline belongs to no
    named wait: wait_id NULL) times out when its deadline passes, once, like before."""
    with Runtime(Settings(database_url=database_url), agents={"twice": _agent()}) as rt:
        thread_id = _due(rt, sql, wait_id=None)
        ended = rt.run(thread_id)
    assert ended.state == "failed"
    assert ended.reason == "no 'payment.settled' signal within 3600s for pay"
    assert _waits(sql, thread_id) == 1


def test_an_idle_worker_waits_for_its_own_agents_deadlines_only(database_url: str) -> None:
    """Another pool's overdue wait does not wake a worker that cannot take it."""
    with Runtime(Settings(database_url=database_url), agents={"twice": _agent()}) as rt:
        thread_id = rt.start("twice", {}).thread_id
        assert rt.run(thread_id).state == "waiting"
        mine = parts(rt).registry.seconds_to_next_wake(["twice"])
        assert mine is not None and 3500 < mine <= 3600
        assert parts(rt).registry.seconds_to_next_wake(["refund"]) is None
        both = parts(rt).registry.seconds_to_next_wake(["refund", "twice"])
        assert both == pytest.approx(mine, abs=60)
