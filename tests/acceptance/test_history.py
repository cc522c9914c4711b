"""history --json is the evidence: a run that was approved, killed and taken over, retried,
timed out and reconciled shows each of those, in order, with its evidence."""

from __future__ import annotations

import json

from tests.conftest import REFUND_INPUT, Cli
from waystone.examples.provider import ProviderProcess


def test_history_shows_the_whole_path_in_order(cli: Cli, provider: ProviderProcess) -> None:
    provider.inject("refunds", "transient", times=1)
    provider.inject("refunds", "timeout_after_apply", delay_s=3)
    env = {"WAYSTONE_TOOL_TIMEOUTS": "refund=1"}
    thread_id = json.loads(
        cli("start", "--agent", "refund", "--input", json.dumps(REFUND_INPUT), "--json").stdout
    )["thread_id"]
    assert json.loads(cli("run", thread_id, "--json", env=env).stdout)["state"] == "waiting"
    killed = cli(
        "approve",
        thread_id,
        "--by",
        "ana",
        "--comment",
        "checked",
        "--run",
        env={**env, "WAYSTONE_CRASH_AT": "authorize:after-decision@refund"},
    )
    assert killed.returncode == -9
    done = cli("run", thread_id, "--json", env=env)
    assert json.loads(done.stdout)["state"] == "done", done.stderr

    history = json.loads(cli("history", thread_id, "--json").stdout)
    events = history["events"]
    kinds = [e["kind"] for e in events]
    expected = [
        "decision",
        "lease-takeover",
        "retry",
        "unknown-outcome",
        "reconciled",
        "effect-confirmed",
    ]
    positions = [kinds.index(k) for k in expected]
    assert positions == sorted(positions), kinds
    by_kind = {e["kind"]: e for e in events}
    assert by_kind["decision"]["actor"] == "ana"
    assert by_kind["decision"]["evidence"]["decision"]["comment"] == "checked"
    assert by_kind["decision"]["evidence"]["decision"]["digest"].startswith("sha256:")
    assert "previous_owner" in by_kind["lease-takeover"]["evidence"]
    assert by_kind["retry"]["evidence"]["attempt"] == 1
    assert by_kind["unknown-outcome"]["evidence"]["timeout_s"] == 1
    assert by_kind["reconciled"]["evidence"]["receipt"]["status"] == "succeeded"
    transitions = [(e["from_state"], e["to_state"]) for e in events if e["kind"] == "transition"]
    assert transitions[0] == (None, "queued") and transitions[-1] == ("running", "done")
    assert [e["id"] for e in events] == sorted(e["id"] for e in events)
    refund = history["effects"][0]
    assert (refund["tool"], refund["status"], refund["attempts"]) == ("refund", "confirmed", 2)
    assert refund["receipt"]["id"] and refund["confirmation"]["status"] == "succeeded"
    assert len(history["checkpoints"]) >= 12
    assert len(provider.ledger()["refunds"]) == 1
