"""Workers as real processes: leases with fencing, SIGSTOP zombies, SIGTERM, scale-out,
concurrent approvals, signals, start keys. Assertions read Postgres and the provider."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from typing import Any

import psycopg

from tests.acceptance.conftest import Workers
from tests.conftest import REFUND_INPUT, ROOT, Cli, wait_until
from tests.support.graphs import GRAPHS
from tests.support.rows import lease_expired, one, run_state, writes
from waystone import Runtime
from waystone.examples.provider import ProviderProcess

SMALL = {**REFUND_INPUT, "amount": "40.00"}  # allowed by policy: no approval


def wait_inside_execute(sql: psycopg.Connection[Any], thread_id: str) -> None:
    """Until the run's effect intent is committed: its worker is inside ``execute``."""

    def inside() -> bool:
        query = "SELECT 1 FROM waystone.effects WHERE thread_id = %s"
        return sql.execute(query, (thread_id,)).fetchone() is not None

    wait_until(inside, "the worker inside execute")


def _faults(provider: ProviderProcess) -> list[Any]:
    with urllib.request.urlopen(f"{provider.url}/_faults", timeout=10) as response:
        faults: list[Any] = json.loads(response.read())
        return faults


def test_zombie_worker_writes_nothing_after_a_takeover(
    runtime: Runtime, provider: ProviderProcess, workers: Workers, sql: psycopg.Connection[Any]
) -> None:
    provider.inject("refunds", "slow", delay_s=3)
    thread_id = runtime.start("refund", SMALL).thread_id
    zombie = workers.spawn("--lease-seconds", "2", "--until-idle", "--name", "A")
    wait_inside_execute(sql, thread_id)
    zombie.send_signal(signal.SIGSTOP)
    wait_until(lambda: lease_expired(sql, thread_id), "A's lease expired")
    rescuer = workers.spawn("--lease-seconds", "2", "--until-idle", "--name", "B")
    assert rescuer.wait(timeout=90) == 0, workers.output(rescuer)
    assert run_state(sql, thread_id) == "done"
    before = writes(sql, thread_id)

    zombie.send_signal(signal.SIGCONT)
    assert zombie.wait(timeout=90) == 0, workers.output(zombie)
    assert writes(sql, thread_id) == before, "the zombie wrote after the takeover"
    assert workers.summary(zombie)["lease_lost"] == 1
    ledger = provider.ledger()
    assert len(ledger["refunds"]) == 1 and len(ledger["notifications"]) == 1
    takeovers = sql.execute(
        "SELECT reason, evidence->>'previous_owner' FROM waystone.run_events "
        "WHERE thread_id = %s AND kind = 'lease-takeover'",
        (thread_id,),
    ).fetchall()
    assert len(takeovers) == 1 and takeovers[0][0] == "lease taken over: lease expired"
    assert takeovers[0][1].endswith(":A")


def test_four_workers_two_hundred_runs_each_effect_once(
    runtime: Runtime, provider: ProviderProcess, workers: Workers, sql: psycopg.Connection[Any]
) -> None:
    ids = [runtime.start("refund", {**SMALL, "order_id": f"o{i}"}).thread_id for i in range(200)]
    procs = [workers.spawn("--until-idle", "--poll-seconds", "0.5") for _ in range(4)]
    for proc in procs:
        assert proc.wait(timeout=400) == 0, workers.output(proc)
    states = dict(sql.execute("SELECT state, count(*) FROM waystone.runs GROUP BY state"))
    assert states == {"done": 200}
    ledger = provider.ledger()
    orders = sorted(r["order_id"] for r in ledger["refunds"])
    assert orders == sorted(f"o{i}" for i in range(200))
    assert len(ledger["notifications"]) == 200
    # one claim per run, no takeover, and every fenced event of a run under one token
    claims = sql.execute(
        "SELECT thread_id, count(*) FROM waystone.run_events WHERE kind = 'transition' "
        "AND to_state = 'running' GROUP BY thread_id"
    ).fetchall()
    assert sorted(t for t, n in claims if n == 1) == sorted(ids)
    assert one(sql, "SELECT count(*) FROM waystone.run_events WHERE kind = 'lease-takeover'") == 0
    mixed = one(
        sql,
        "SELECT count(*) FROM (SELECT thread_id FROM waystone.run_events "
        "WHERE lease_token > 0 GROUP BY thread_id "
        "HAVING count(DISTINCT lease_token) > 1) t",
    )
    assert mixed == 0
    assert sum(workers.summary(p)["driven"] for p in procs) == 200


def test_two_approvals_at_once_take_effect_once(
    cli: Cli, runtime: Runtime, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    thread_id = runtime.start("refund", REFUND_INPUT).thread_id
    assert runtime.run(thread_id).state == "waiting"
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "waystone", "approve", thread_id, "--by", who],
            env=cli.env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for who in ("ana", "bob")
    ]
    results = [(p.wait(timeout=60), p.communicate()[1]) for p in procs]
    assert sorted(code for code, _ in results) == [0, 4], results
    assert "already recorded" in next(err for code, err in results if code == 4)
    assert one(sql, "SELECT count(*) FROM waystone.signals WHERE thread_id = %s", thread_id) == 1
    assert runtime.run(thread_id).state == "done"
    assert len(provider.ledger()["refunds"]) == 1


def test_sigterm_finishes_the_step_and_releases_the_lease(
    runtime: Runtime, provider: ProviderProcess, workers: Workers, sql: psycopg.Connection[Any]
) -> None:
    provider.inject("refunds", "slow", delay_s=2)
    thread_id = runtime.start("refund", SMALL).thread_id
    busy = workers.spawn("--lease-seconds", "60")
    # the call is at the provider (it took the slow fault), not yet answered: an intent
    # alone is committed with authorize's checkpoint, before execute begins
    wait_until(lambda: _faults(provider) == [], "the refund request at the provider")
    busy.send_signal(signal.SIGTERM)
    assert busy.wait(timeout=60) == 0, workers.output(busy)
    run = sql.execute(
        "SELECT state, lease_owner, lease_expires_at <= clock_timestamp() "
        "FROM waystone.runs WHERE thread_id = %s",
        (thread_id,),
    ).fetchone()
    assert run == ("running", None, True)  # released, not left to expire in 60 s
    assert one(sql, "SELECT status FROM waystone.effects WHERE thread_id = %s", thread_id) in (
        "applied",
        "confirmed",
    )  # the step in hand was finished
    successor = workers.spawn("--until-idle")
    assert successor.wait(timeout=60) == 0, workers.output(successor)
    assert run_state(sql, thread_id) == "done"
    reason = one(
        sql,
        "SELECT reason FROM waystone.run_events WHERE thread_id = %s AND kind = 'lease-takeover'",
        thread_id,
    )
    assert reason == "lease taken over: lease released"
    assert len(provider.ledger()["refunds"]) == 1


def test_start_key_starts_one_run(cli: Cli, sql: psycopg.Connection[Any]) -> None:
    args = ("start", "--agent", "refund", "--input", json.dumps(SMALL), "--key", "cron-1", "--json")
    first, second = cli(*args), cli(*args)
    assert first.returncode == 0 and second.returncode == 0, (first.stderr, second.stderr)
    assert json.loads(first.stdout)["thread_id"] == json.loads(second.stdout)["thread_id"]
    assert one(sql, "SELECT count(*) FROM waystone.runs") == 1
    other = cli(
        "start",
        "--agent",
        "refund",
        "--input",
        json.dumps({**SMALL, "order_id": "2"}),
        "--key",
        "cron-1",
    )
    assert other.returncode == 4 and "start key" in other.stderr


WEBHOOK = {
    "WAYSTONE_AGENTS": (
        "waystone.examples.settlement:settled,waystone.examples.settlement:settled_briefly"
    )
}


def start_settlement(cli: Cli, agent: str) -> str:
    """Start a run of a settlement agent (refund confirmed by a webhook); its thread id."""
    started = cli("start", "--agent", agent, "--input", json.dumps(SMALL), "--json", env=WEBHOOK)
    assert started.returncode == 0, started.stderr
    thread_id: str = json.loads(started.stdout)["thread_id"]
    return thread_id


def test_signal_sent_before_the_wait_is_delivered(
    cli: Cli, provider: ProviderProcess, workers: Workers, sql: psycopg.Connection[Any]
) -> None:
    thread_id = start_settlement(cli, "settled")
    sent = cli(
        "signal",
        thread_id,
        "refund.settled",
        "--payload",
        '{"settlement": "s_1"}',
        "--json",
        env=WEBHOOK,
    )
    assert sent.returncode == 0, sent.stderr
    worker = workers.spawn("--until-idle", env=WEBHOOK)
    assert worker.wait(timeout=60) == 0, workers.output(worker)
    assert run_state(sql, thread_id) == "done"
    confirmation = one(
        sql,
        "SELECT confirmation FROM waystone.effects WHERE thread_id = %s AND tool = 'refund'",
        thread_id,
    )
    assert confirmation["status"] == "succeeded"
    assert (
        one(
            sql,
            "SELECT count(*) FROM waystone.signals WHERE thread_id = %s "
            "AND consumed_at IS NOT NULL",
            thread_id,
        )
        == 1
    )


def test_signal_wakes_a_waiting_run(
    cli: Cli, provider: ProviderProcess, workers: Workers, sql: psycopg.Connection[Any]
) -> None:
    thread_id = start_settlement(cli, "settled")
    idle = workers.spawn("--poll-seconds", "60", env=WEBHOOK)  # only NOTIFY can wake it soon
    wait_until(
        lambda: run_state(sql, thread_id) == "waiting",
        "the run waits for its webhook",
    )
    assert (
        one(sql, "SELECT waiting_for FROM waystone.runs WHERE thread_id = %s", thread_id)
        == "refund.settled"
    )
    assert cli("signal", thread_id, "refund.settled", env=WEBHOOK).returncode == 0
    wait_until(
        lambda: run_state(sql, thread_id) == "done",
        "the signal woke the run",
        timeout=30,
    )
    idle.send_signal(signal.SIGTERM)
    assert idle.wait(timeout=30) == 0


def test_a_wait_that_times_out_follows_its_policy(
    cli: Cli, provider: ProviderProcess, workers: Workers, sql: psycopg.Connection[Any]
) -> None:
    thread_id = start_settlement(cli, "settled_briefly")
    first = workers.spawn("--until-idle", env=WEBHOOK)
    assert first.wait(timeout=60) == 0
    assert run_state(sql, thread_id) == "waiting"
    wait_until(
        lambda: one(
            sql,
            "SELECT wake_at <= clock_timestamp() FROM waystone.runs WHERE thread_id = %s",
            thread_id,
        ),
        "the wait's deadline passed",
    )
    second = workers.spawn("--until-idle", env=WEBHOOK)
    assert second.wait(timeout=60) == 0
    state, reason = sql.execute(
        "SELECT state, reason FROM waystone.runs WHERE thread_id = %s", (thread_id,)
    ).fetchone() or ("", "")
    assert state == "failed"
    assert reason == "no 'refund.settled' signal within 1s for refund"
    assert len(provider.ledger()["refunds"]) == 1


def test_a_worker_claims_only_runs_of_the_agents_it_has(
    cli: Cli, provider: ProviderProcess, workers: Workers, sql: psycopg.Connection[Any]
) -> None:
    """Pools of workers serve different agents: one without the settlement agents (no
    WAYSTONE_AGENTS) leaves their run queued, untouched; one with them drives it."""
    thread_id = start_settlement(cli, "settled")
    theirs = cli("start", "--agent", "refund", "--input", json.dumps(SMALL), "--json")
    assert theirs.returncode == 0, theirs.stderr
    other = json.loads(theirs.stdout)["thread_id"]
    plain = workers.spawn("--until-idle")  # knows the refund agent only
    assert plain.wait(timeout=60) == 0, workers.output(plain)
    assert workers.summary(plain)["errors"] == 0
    assert run_state(sql, other) == "done"
    query = "SELECT state, attempts, lease_owner FROM waystone.runs WHERE thread_id = %s"
    assert sql.execute(query, (thread_id,)).fetchone() == ("queued", 0, None)
    narrowed = workers.spawn("--until-idle", "--agent", "refund", env=WEBHOOK)  # has it, skips it
    assert narrowed.wait(timeout=60) == 0, workers.output(narrowed)
    assert sql.execute(query, (thread_id,)).fetchone() == ("queued", 0, None)
    unknown = cli("worker", "--until-idle", "--agent", "nobody")
    assert unknown.returncode != 0 and "not ['nobody']" in unknown.stderr, unknown.stderr
    settling = workers.spawn("--until-idle", env=WEBHOOK)
    assert settling.wait(timeout=60) == 0, workers.output(settling)
    assert run_state(sql, thread_id) == "waiting"


def test_cancel_a_queued_run(cli: Cli, runtime: Runtime, sql: psycopg.Connection[Any]) -> None:
    thread_id = runtime.start("refund", SMALL).thread_id
    cancelled = cli("cancel", thread_id, "--reason", "customer withdrew", "--json")
    assert cancelled.returncode == 0, cancelled.stderr
    assert json.loads(cancelled.stdout)["state"] == "failed"
    assert (
        one(sql, "SELECT reason FROM waystone.runs WHERE thread_id = %s", thread_id)
        == "cancelled by tester: customer withdrew"
    )
    again = cli("cancel", thread_id, "--reason", "again")
    assert again.returncode == 4, again.stderr


def test_an_idle_worker_continues_a_graph_run_once_its_interrupt_is_answered(
    cli: Cli, workers: Workers, sql: psycopg.Connection[Any]
) -> None:
    """A user's graph, from WAYSTONE_GRAPHS: a worker drives it to its interrupt() and
    holds nothing while it waits; `resume` from another process wakes an idle worker."""
    graphs = {"WAYSTONE_GRAPHS": GRAPHS}
    started = cli("start", "--graph", "ask", "--input", '{"question": "q"}', "--json", env=graphs)
    assert started.returncode == 0, started.stderr
    thread_id = json.loads(started.stdout)["thread_id"]
    idle = workers.spawn("--poll-seconds", "60", env=graphs)  # only NOTIFY can wake it soon
    query = "SELECT state, lease_owner FROM waystone.runs WHERE thread_id = %s"
    wait_until(
        lambda: sql.execute(query, (thread_id,)).fetchone() == ("waiting", None),
        "the run waits on its interrupt, holding no lease",
    )
    answered = cli("resume", thread_id, "--value", '"blue"', env=graphs)
    assert answered.returncode == 0, answered.stderr
    wait_until(
        lambda: run_state(sql, thread_id) == "done",
        "the value woke the run",
        timeout=30,
    )
    idle.send_signal(signal.SIGTERM)
    assert idle.wait(timeout=30) == 0
