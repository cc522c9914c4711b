"""kill -9 at every crash point, for both tools: the run resumes from a new process, ends
``done``, and the provider holds exactly one refund and one notification.

The points come from ``waystone debug crash-points --json``, not from a list kept here.
Every scenario also makes each endpoint fail once with a 503, so each effect goes through
a persisted retry as well as the crash.
"""

from __future__ import annotations

import json

import psycopg
import pytest

from tests.conftest import REFUND_INPUT, Cli
from tests.support.crashes import crash_points
from tests.support.rows import effects
from waystone.examples.provider import ProviderProcess

TOOLS = ("refund", "notify_customer")


CASES = [
    pytest.param(f"{p['name']}@{tool}" if tool else p["name"], id=f"{p['name']}@{tool or 'any'}")
    for p in crash_points()
    if not p["name"].startswith("webhook:")  # a delivery's, not a run's: test_api_webhooks
    for tool in (TOOLS if p["per_tool"] else (None,))
]


@pytest.mark.parametrize("armed", CASES)
def test_killed_then_resumed_ends_done_with_each_effect_once(
    armed: str, cli: Cli, provider: ProviderProcess, database_url: str
) -> None:
    provider.inject("refunds", "transient", times=1)
    provider.inject("notifications", "transient", times=1)
    started = cli("start", "--agent", "refund", "--input", json.dumps(REFUND_INPUT), "--json")
    assert started.returncode == 0, started.stderr
    last = json.loads(started.stdout)
    thread_id = last["thread_id"]
    # a notification found absent is sent again once its call's deadline (2 s) has passed
    calm = {
        "WAYSTONE_TOOL_SETTLE": "notify_customer=1",
        "WAYSTONE_TOOL_TIMEOUTS": "notify_customer=2",
    }
    crash = {**calm, "WAYSTONE_CRASH_AT": armed}
    killed = 0
    for _ in range(8):  # each step is a new process; the next one is chosen from the last
        if last["state"] == "done":
            break
        env = calm if killed else crash
        if last["state"] == "waiting" and not last["decision_recorded"]:
            result = cli("approve", thread_id, "--by", "ana", "--run", "--json", env=env)
        else:
            result = cli("run", thread_id, "--json", env=env)
        if result.returncode == -9:  # SIGKILL: resume with a plain `run`
            killed += 1
            last = {"state": "running", "decision_recorded": False}
            continue
        assert result.returncode == 0, result.stderr
        last = json.loads(result.stdout)
    assert killed == 1, f"{armed} was never reached"
    final = json.loads(cli("status", thread_id, "--json").stdout)
    assert final["state"] == "done", final

    ledger = provider.ledger()
    assert [r["order_id"] for r in ledger["refunds"]] == ["1001"]
    assert [n["to"] for n in ledger["notifications"]] == ["ana@example.com"]
    with psycopg.connect(database_url) as conn:
        ledger_rows = effects(conn, thread_id, "tool", "status")
        waits = conn.execute(
            "SELECT count(*) FROM waystone.run_events WHERE thread_id = %s "
            "AND kind = 'transition' AND to_state = 'waiting'",
            (thread_id,),
        ).fetchone()
        decisions = conn.execute(
            "SELECT count(*) FROM waystone.signals WHERE thread_id = %s", (thread_id,)
        ).fetchone()
    assert ledger_rows == [("refund", "confirmed"), ("notify_customer", "confirmed")]
    assert waits == (1,), "the approval was asked again"
    assert decisions == (1,)
