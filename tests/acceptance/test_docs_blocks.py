"""The code blocks of ``docs/`` run as written. A python block runs as it is, in a new
interpreter in a new directory on the test's database, with the example provider up (the
agent is told where, as ``WAYSTONE_PAYMENTS_URL`` tells it). The settle commands of
``docs/tools.md`` run on runs that a kill left ``needs-human``, their ``THREAD`` and
``KEY`` those runs' own; each finishes ``done``. The migrate commands run on a database
with no schema. The benchmark commands run as written, made small (one worker, few
repeats): each prints the figures the page quotes; their timing is never asserted
(``scripts/README.md``). The README's blocks, the CLI's tour and the graph commands are
in ``test_readme.py``; ``tests/unit/test_docs.py`` checks that every block has a test."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.test_settle import _ledger
from tests.conftest import ROOT, Cli
from tests.support.blocks import (
    GENERIC,
    Block,
    argv,
    block,
    code_blocks,
    console,
    fetched,
    runner,
)
from tests.support.outputs import ok
from tests.support.safe_graphs import GRAPHS, trip
from tests.support.trips import KILLS, SAID, bookings
from waystone.examples.provider import ProviderProcess
from waystone.runtime import Runtime

RUN_AS_THEY_ARE = [b for b in code_blocks() if runner(b, fetched()) == GENERIC]


@pytest.mark.parametrize(
    "found", RUN_AS_THEY_ARE, ids=[f"{b.page}:{b.heading}" for b in RUN_AS_THEY_ARE]
)
def test_a_python_block_runs(
    found: Block, new_directory: tuple[Path, dict[str, str]], provider: ProviderProcess
) -> None:
    cwd, env = new_directory
    env["WAYSTONE_PAYMENTS_URL"] = provider.url
    done = subprocess.run(
        [sys.executable, "-c", found.code], cwd=cwd, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_the_python_blocks_are_found() -> None:
    assert {
        ("docs/agents.md", "From Python"),
        ("docs/agents.md", "Plug in a model and a tool"),
        ("docs/api.md", "The LangGraph server API"),
        ("docs/effects.md", "`@waystone.effect`"),
        ("docs/graphs.md", "The saver on its own"),
    } <= {(b.page, b.heading) for b in RUN_AS_THEY_ARE}


@pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecatedSinceV10")
@pytest.mark.timeout(300)  # three runs, each killed once: a dozen processes
def test_the_settle_commands_run_as_written(
    cli: Cli, provider: ProviderProcess, runtime: Runtime, database_url: str
) -> None:
    """Each ``settle`` line is one way to settle (the page's ``or``): each settles a run of
    its own, approved, then killed after the booking's intent and before its request, so
    that it ends ``needs-human``; then the page's ``requeue`` and a ``run`` finish it."""
    cli.env["WAYSTONE_GRAPHS"] = GRAPHS
    runtime.register_graph("trip", trip)
    found = block("docs/tools.md", "Settling a call by hand", "bash")
    lines = [w for w in (shlex.split(t, comments=True) for t in found.code.splitlines()) if w]
    settles = [w for w in lines if w[:2] == ["waystone", "settle"]]
    [requeue] = [w for w in lines if w[:2] == ["waystone", "requeue"]]
    assert len(settles) == 3 and len(lines) == 4
    for settle in settles:
        waiting = runtime.invoke("trip", SAID)
        assert waiting.state == "waiting", waiting
        thread_id = waiting.thread_id
        runtime.resume(thread_id, "yes")
        kill = {"WAYSTONE_CRASH_AT": KILLS["before-the-request"]}
        died = cli("run", thread_id, "--json", env=kill)
        assert died.returncode == -9, died.stderr
        assert runtime.run(thread_id).state == "needs-human"
        [key] = [e["key"] for e in runtime.history(thread_id)["effects"] if e["tool"] == "book"]
        booked = len(bookings(provider))

        given = {"THREAD": thread_id, "KEY": key}
        settled = cli(*[given.get(w, w) for w in settle[1:]])
        assert settled.returncode == 0, (settle, settled.stderr)
        [(_, status, _, receipt)] = _ledger(database_url, thread_id)
        if "--absent" in settle:
            assert status == "absent"
        else:
            assert status == "confirmed"
            reason = settle[settle.index("--reason") + 1]
            if "--receipt" in settle:
                assert receipt == json.loads(settle[settle.index("--receipt") + 1])
            else:
                by = settle[settle.index("--by") + 1]
                assert receipt == {"settled_by": by, "reason": reason}
        requeued = cli(*[given.get(w, w) for w in requeue[1:]])
        assert requeued.returncode == 0, requeued.stderr
        assert ok(cli("run", thread_id, "--json"))["state"] == "done"
        made_again = 1 if "--absent" in settle else 0  # applied: not made again
        assert len(bookings(provider)) == booked + made_again


def test_the_migrate_commands_run_as_written(
    empty_database_url: str, new_directory: tuple[Path, dict[str, str]]
) -> None:
    """On a database with no schema: the dry run lists what it lacks and applies nothing,
    then ``migrate`` applies it all."""
    cwd, env = new_directory
    env["WAYSTONE_DATABASE_URL"] = empty_database_url
    lines = console(block("docs/migrations.md", "When migrations run", "console"))
    assert [line.command for line in lines] == ["waystone migrate --dry-run", "waystone migrate"]

    def pending() -> list[object]:
        shown = subprocess.run(
            argv(["waystone", "migrate", "--dry-run", "--json"]),
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
        )
        return list(ok(shown)["pending"])

    for line, left in zip(lines, (True, False), strict=True):
        done = subprocess.run(
            argv(shlex.split(line.command)), cwd=cwd, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, (line.command, done.stderr)
        assert all(s in done.stdout.splitlines() for s in line.shown), done.stdout
        assert bool(pending()) is left, line.command


BENCHMARKS = [
    w
    for w in (
        shlex.split(t, comments=True)
        for t in block("docs/benchmarks.md", "Commands", "bash").code.splitlines()
    )
    if w
]
# Besides the page's words, what makes each line run in seconds (its figures are checked,
# never their timing): bench.py's fewer repeats and one worker process (the last --workers
# wins over the page's); runs of 2 and 4 actions; 2 wake-ups; a backlog of 200 runs; one
# timed run per CLI command; 2 clients and no `langgraph dev` (not installed here); --json.
SMALL = {
    "scripts/bench.py": shlex.split("--quick --workers 1"),
    "scripts/bench_storage.py": shlex.split("--steps 2,4 --json"),
    "scripts/bench_wake.py": shlex.split("--samples 2 --json"),
    "scripts/bench_claim.py": shlex.split("--backlog 200"),
    "scripts/bench_cli.py": shlex.split("--runs 1 --json"),
    "scripts/bench_serve.py": shlex.split("--clients 2 --concurrency 2 --skip-reference --json"),
}
PER_STEP = {
    "raw",
    "langgraph",
    "langgraph_in_memory",
    "langgraph_no_checkpointer",
    "waystone",
    "waystone_start_run",
    "waystone_marginal",
    "waystone_graph",
    "dbos",
}


def _figures(words: list[str], report: dict[str, Any]) -> None:
    """The figures ``docs/benchmarks.md`` quotes from the line's output are in it."""
    script = words[1]
    if script == "scripts/bench.py":
        assert report["per_step_method"] == ("blocks" if "--blocks" in words else "interleaved")
        rows = report["per_step"]
        only = words[words.index("--rows") + 1].split(",") if "--rows" in words else None
        assert set(rows) == (PER_STEP if only is None else {*only, "langgraph"}), rows
        for name, row in rows.items():
            if name == "dbos" and isinstance(row, str):
                assert row.startswith("skipped"), row  # without `.[bench]`
                continue
            assert row["median_ms"] > 0 and row["ratio_to_langgraph"] > 0, (name, row)
        if only is None:
            assert list(report["throughput_runs_per_s"]) == ["1"]
            assert report["throughput_runs_per_s"]["1"] > 0
            assert set(report["storage_bytes_per_action"]) == {"10", "200"}
            assert report["lease_expiry_to_next_step_s"] >= 0
            for wake in ("approve_to_next_step_ms", "signal_to_next_step_ms"):
                assert report[wake]["median_ms"] > 0, wake
        else:
            assert "throughput_runs_per_s" not in report
    elif script == "scripts/bench_storage.py":
        assert [r["actions"] for r in report["runs"]] == [2, 4]
        assert all(r["bytes_per_action"] > 0 for r in report["runs"])
        assert report["ratio_last_to_first"] > 0
    elif script == "scripts/bench_wake.py":
        for wake in ("signal_to_next_step", "approve_to_next_step"):
            assert report[wake]["median_ms"] > 0, wake
    elif script == "scripts/bench_claim.py":
        behind = ("backlog", "due_waits", "expired_leases")
        shown = {"no_backlog_ms", "backlog_200_ms", *(f"other_agents_{b}_200_ms" for b in behind)}
        assert set(report) == shown, report
        assert all(report[k]["any"] > 0 for k in shown), report
        assert report["no_backlog_ms"]["named"] > 0 and report["backlog_200_ms"]["named"] > 0
    elif script == "scripts/bench_cli.py":
        assert set(report["commands"]) == {"--help", "status", "list"}
        assert all(c["median_s"] > 0 for c in report["commands"].values())
    else:
        assert script == "scripts/bench_serve.py", words
        served = report["waystone"]
        assert (served["completed"], served["clients"], served["errors"]) == (2, 2, 0), served
        assert served["first_event_ms"]["p50"] > 0 and served["events_per_s"] > 0, served
        assert served["first_token_ms"]["p50"] >= served["first_event_ms"]["p50"], served
        assert set(served["cpu_s"]) == {"waystone api", "worker", "postgres"}, served
        assert "langgraph dev" not in report


def test_the_benchmark_commands_are_nine() -> None:
    assert len(BENCHMARKS) == 9
    assert all(w[0] == "python" and w[1] in SMALL for w in BENCHMARKS), BENCHMARKS


@pytest.mark.timeout(300)
@pytest.mark.parametrize("words", BENCHMARKS, ids=[shlex.join(w[1:]) for w in BENCHMARKS])
def test_a_benchmark_command_runs_small(
    words: list[str], new_directory: tuple[Path, dict[str, str]]
) -> None:
    """Each line as the page writes it, plus the options of ``SMALL``, on the test's
    database (``bench_serve.py`` starts its own embedded Postgres in a new home, as it
    always does): it exits 0 and prints, as one JSON object, the figures the page quotes."""
    cwd, env = new_directory
    command = [*argv(words), *SMALL[words[1]]]
    command[1] = str(ROOT / words[1])  # the page runs from the project's root; this, elsewhere
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, (words, done.stderr[-3000:])
    _figures(words, json.loads(done.stdout.strip().splitlines()[-1]))
