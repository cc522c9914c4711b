"""A user's graph with a checkpointed subgraph and a ``Send`` fan-out, in real processes:
killed midway through the fan-out, it resumes without running again the branches whose
writes were saved; a worker frozen past its lease writes nothing once another took the
run over. Executions are counted from the marks the node bodies leave, effects from the
provider's own records, writes from Postgres."""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.acceptance.conftest import Workers, stopped
from tests.conftest import Cli, wait_until
from tests.support import fanout
from tests.support.rows import lease_expired, one, run_state, writes
from waystone.config import Settings
from waystone.examples.provider import ProviderProcess
from waystone.runtime import Runtime

ORDER = {"order_id": "o7"}
BRANCHES = [f"branch-{n}" for n in range(len(fanout.AMOUNTS))]


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    return tmp_path / "marks"


@pytest.fixture
def env(marks: Path) -> dict[str, str]:
    return {"WAYSTONE_GRAPHS": fanout.GRAPHS, fanout.MARKS: str(marks)}


def executions(marks: Path) -> Counter[str]:
    return Counter(marks.read_text().split())


def start(cli: Cli, env: dict[str, str]) -> str:
    started = cli("start", "--graph", "fanout", "--input", json.dumps(ORDER), "--json", env=env)
    assert started.returncode == 0, started.stderr
    thread_id: str = json.loads(started.stdout)["thread_id"]
    return thread_id


def assert_each_refund_once(provider: ProviderProcess) -> None:
    refunds = provider.ledger()["refunds"]
    assert sorted(r["order_id"] for r in refunds) == [f"o7-{n}" for n in range(len(BRANCHES))]
    assert len({r["idempotency_key"] for r in refunds}) == len(BRANCHES)


def assert_finished(database_url: str, sql: psycopg.Connection[Any], thread_id: str) -> None:
    """Done, with every branch's receipt in the state and every effect applied in the
    ledger (none left as an intent, whatever process made it)."""
    assert run_state(sql, thread_id) == "done"
    with Runtime(Settings(database_url=database_url), graphs={"fanout": fanout.fanout_graph}) as rt:
        values = rt.graph("fanout").get_state(rt.config(thread_id)).values
    assert sorted(r["order_id"] for r in values["receipts"]) == [
        f"o7-{n}" for n in range(len(BRANCHES))
    ]
    assert values["log"] == ["intake", "closed with 4 refunds"]
    statuses = sql.execute(
        "SELECT status, count(*) FROM waystone.effects WHERE thread_id = %s GROUP BY status",
        (thread_id,),
    ).fetchall()
    assert statuses == [("applied", len(BRANCHES))]


def test_a_fanout_killed_midway_runs_again_only_the_branch_not_saved(
    cli: Cli,
    env: dict[str, str],
    marks: Path,
    provider: ProviderProcess,
    database_url: str,
    sql: psycopg.Connection[Any],
) -> None:
    thread_id = start(cli, env)
    killed = cli("run", thread_id, env={**env, fanout.KILL: "branch-2"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert executions(marks) == Counter(["intake", "plan", *BRANCHES])
    saved = sql.execute(
        "SELECT DISTINCT checkpoint_ns FROM checkpoints WHERE thread_id = %s ORDER BY 1",
        (thread_id,),
    ).fetchall()
    assert [ns.split(":")[0] for (ns,) in saved] == ["", "refunds"]  # the subgraph's own

    resumed = cli("run", thread_id, "--json", env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["state"] == "done"
    # the subgraph resumed at its fan-out: plan is not run again, nor a saved branch
    assert executions(marks) == Counter(["intake", "plan", *BRANCHES, "branch-2", "tally", "close"])
    assert_each_refund_once(provider)
    assert_finished(database_url, sql, thread_id)


def test_a_worker_frozen_in_the_fanout_writes_nothing_after_a_takeover(
    cli: Cli,
    env: dict[str, str],
    provider: ProviderProcess,
    workers: Workers,
    database_url: str,
    sql: psycopg.Connection[Any],
) -> None:
    thread_id = start(cli, env)
    # it stops itself once a branch's refund is made, before its receipt is recorded
    frozen = {**env, "WAYSTONE_FREEZE_AT": "execute:after-apply@refund"}
    zombie = workers.spawn("--lease-seconds", "2", "--until-idle", "--name", "A", env=frozen)
    wait_until(lambda: stopped(zombie), "A stopped itself inside a branch")
    zombie_token = one(sql, "SELECT lease_token FROM waystone.runs WHERE thread_id = %s", thread_id)
    wait_until(lambda: lease_expired(sql, thread_id), "A's lease expired")
    rescuer = workers.spawn("--lease-seconds", "2", "--until-idle", "--name", "B", env=env)
    assert rescuer.wait(timeout=90) == 0, workers.output(rescuer)
    assert_finished(database_url, sql, thread_id)
    before = writes(sql, thread_id)

    zombie.send_signal(signal.SIGCONT)
    assert zombie.wait(timeout=90) == 0, workers.output(zombie)
    assert writes(sql, thread_id) == before, "the frozen worker wrote after the takeover"
    assert workers.summary(zombie)["lease_lost"] == 1
    assert_each_refund_once(provider)
    takeover = sql.execute(
        "SELECT lease_token, evidence->>'previous_owner' FROM waystone.run_events "
        "WHERE thread_id = %s AND kind = 'lease-takeover'",
        (thread_id,),
    ).fetchall()
    assert len(takeover) == 1 and takeover[0][1].endswith(":A")
    late = one(
        sql,
        "SELECT count(*) FROM waystone.run_events WHERE thread_id = %s AND lease_token = %s "
        "AND id > (SELECT id FROM waystone.run_events WHERE thread_id = %s "
        "AND kind = 'lease-takeover')",
        thread_id,
        zombie_token,
        thread_id,
    )
    assert late == 0
