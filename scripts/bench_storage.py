"""Storage per step stays flat as a run grows: bytes stored per action for a 10-action run
and for a 200-action run of the same agent (a tool that does nothing, allowed by policy).

Counts every row the run leaves behind: LangGraph's checkpoints, blobs and pending writes,
and Waystone's events and effect ledger (pg_column_size of each row). Usage::

    python scripts/bench_storage.py [--json] [--steps 10,200]

Uses WAYSTONE_DATABASE_URL, or the embedded Postgres under WAYSTONE_HOME.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from pydantic import BaseModel

from waystone import AgentSpec, Check, CheckResult, Rule, RulePolicy, Runtime, Settings, Tool
from waystone.preset.proposers import Proposal, ScriptedProposer

BYTES = """
SELECT
  (SELECT coalesce(sum(pg_column_size(c.*)), 0) FROM checkpoints c WHERE thread_id = %(t)s)
+ (SELECT coalesce(sum(pg_column_size(b.*)), 0) FROM checkpoint_blobs b WHERE thread_id = %(t)s)
+ (SELECT coalesce(sum(pg_column_size(w.*)), 0) FROM checkpoint_writes w WHERE thread_id = %(t)s)
+ (SELECT coalesce(sum(pg_column_size(e.*)), 0) FROM waystone.run_events e WHERE thread_id = %(t)s)
+ (SELECT coalesce(sum(pg_column_size(f.*)), 0) FROM waystone.effects f WHERE thread_id = %(t)s)
  AS bytes
"""


class NoteArgs(BaseModel):
    n: int


def agent(actions: int) -> AgentSpec:
    tool = Tool(
        name="note",
        description="does nothing",
        args_model=NoteArgs,
        apply=lambda args, key, timeout: {"id": key, "n": args["n"]},
        confirm=lambda args, key, receipt, timeout: receipt,
        idempotent_by_key=True,  # it does nothing, so doing it again is harmless
    )

    def all_done(_input: dict[str, Any], completed: list[dict[str, Any]]) -> CheckResult:
        last = completed[-1]["ordinal"] if completed else 0
        return CheckResult(last >= actions, f"{last} of {actions}")

    return AgentSpec(
        name=f"steps{actions}",
        tools={"note": tool},
        policy=RulePolicy([Rule("allow", "notes are harmless")]),
        proposer=ScriptedProposer(lambda _i: [Proposal("note", {"n": i}) for i in range(actions)]),
        checks=[Check("all_done", all_done)],
        max_steps=actions + 5,
    )


def one_action() -> AgentSpec:
    """For WAYSTONE_AGENTS: the one-action agent the benchmarks' workers drive."""
    return agent(1)


def measure(actions: int) -> dict[str, Any]:
    spec = agent(actions)
    with Runtime(Settings.from_env(), agents={spec.name: spec}) as rt:
        thread_id = rt.start(spec.name, {}).thread_id
        status = rt.run(thread_id)
        assert status.state == "done", status.reason
        with rt._parts.db.connection() as conn:
            row = conn.execute(BYTES, {"t": thread_id}).fetchone()
    total = int(row["bytes"]) if row else 0
    return {"actions": actions, "bytes": total, "bytes_per_action": round(total / actions)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="10,200")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runs = [measure(int(n)) for n in args.steps.split(",")]
    ratio = runs[-1]["bytes_per_action"] / runs[0]["bytes_per_action"]
    result = {"runs": runs, "ratio_last_to_first": round(ratio, 3)}
    if args.json:
        print(json.dumps(result))
    else:
        for r in runs:
            print(
                f"{r['actions']:5d} actions: {r['bytes']:10d} bytes, "
                f"{r['bytes_per_action']:7d} bytes per action"
            )
        print(f"ratio (per action, {runs[-1]['actions']} vs {runs[0]['actions']}): {ratio:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
