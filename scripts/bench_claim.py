"""What a claim costs with a backlog: median ms of a worker's claim (the next run of its
agent) and of a named one, with no other runs, then with ``--backlog`` queued runs of that
agent waiting, then with the backlog another agent's: queued, then overdue (waits past their
deadline, then leases long expired).

    python scripts/bench_claim.py [--backlog 20000]

Uses WAYSTONE_DATABASE_URL, or the embedded Postgres under WAYSTONE_HOME. The backlog is
deleted again at the end.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_storage  # noqa: E402

from waystone import Runtime, Settings  # noqa: E402

OVERDUE = {
    "due_waits": "state = 'waiting', waiting_for = 'x', wake_at = now() - interval '1 h'",
    "expired_leases": "state = 'running', lease_expires_at = now() - interval '1 h'",
}


def claims(rt: Runtime, agent: str, named: bool, samples: int = 100) -> float:
    """Median ms of a claim of a run just started (by name, or any run of the agent)."""
    out = []
    for _ in range(samples):
        thread_id = rt.start(agent, {}).thread_id
        start = time.perf_counter()
        run = rt._parts.registry.claim(
            owner=rt._parts.owner,
            lease_seconds=30,
            thread_id=thread_id if named else None,
            agents=[agent],
        )
        out.append(time.perf_counter() - start)
        assert run is not None
        rt._parts.registry.transition(
            run.thread_id,
            "failed",
            reason="bench",
            from_states=("running",),
            lease_token=run.lease_token,
        )
    return round(statistics.median(out) * 1000, 3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backlog", type=int, default=20000)
    args = parser.parse_args()
    spec = bench_storage.agent(1)
    prefix = f"backlog-{uuid.uuid4().hex[:8]}-"
    report = {}
    with Runtime(Settings.from_env(), agents={spec.name: spec}) as rt:
        report["no_backlog_ms"] = {
            "any": claims(rt, spec.name, False),
            "named": claims(rt, spec.name, True),
        }
        with rt._parts.db.transaction() as conn:
            conn.execute(
                "INSERT INTO waystone.runs (thread_id, agent, goal, input, state, reason) "
                "SELECT %s || g, %s, 'backlog', '{}'::jsonb, 'queued', 'backlog' "
                "FROM generate_series(1, %s) g",
                (prefix, spec.name, args.backlog),
            )
        try:
            with rt._parts.db.connection() as conn:
                conn.execute("ANALYZE waystone.runs")
            # the backlog is older: a worker's claim takes from it, then the new run
            report[f"backlog_{args.backlog}_ms"] = {
                "any": claims(rt, spec.name, False),
                "named": claims(rt, spec.name, True),
            }
            # the backlog is another agent's: a worker that serves this one only
            with rt._parts.db.connection() as conn:
                conn.execute(
                    "UPDATE waystone.runs SET agent = 'elsewhere' WHERE thread_id LIKE %s",
                    (prefix + "%",),
                )
                conn.execute("VACUUM ANALYZE waystone.runs")  # the moved rows' old versions
            report[f"other_agents_backlog_{args.backlog}_ms"] = {
                "any": claims(rt, spec.name, False)
            }
            # the same runs overdue: waits past their deadline, then leases long expired
            # (an agent no worker serves any more), put in place with the triggers off
            for name, moved in OVERDUE.items():
                with rt._parts.db.transaction() as conn:
                    conn.execute("ALTER TABLE waystone.runs DISABLE TRIGGER USER")
                    conn.execute(
                        f"UPDATE waystone.runs SET {moved} WHERE thread_id LIKE %s",
                        (prefix + "%",),
                    )
                    conn.execute("ALTER TABLE waystone.runs ENABLE TRIGGER USER")
                with rt._parts.db.connection() as conn:
                    conn.execute("VACUUM ANALYZE waystone.runs")
                report[f"other_agents_{name}_{args.backlog}_ms"] = {
                    "any": claims(rt, spec.name, False)
                }
        finally:
            with rt._parts.db.connection() as conn:
                conn.execute("DELETE FROM waystone.runs WHERE thread_id LIKE %s", (prefix + "%",))
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
