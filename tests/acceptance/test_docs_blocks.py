"""The code blocks of ``docs/`` run as written. A python block runs as it is, in a new
interpreter in a new directory on the test's database, with the example provider up (the
agent is told where, as ``WAYSTONE_PAYMENTS_URL`` tells it). The settle commands of
``docs/tools.md`` run on runs that a kill left ``needs-human``, their ``THREAD`` and
``KEY`` those runs' own; each finishes ``done``. The migrate commands run on a database
with no schema. The benchmark commands name scripts and options that exist: a benchmark
measures, so the suite does not run one (``scripts/README.md``). The README's blocks, the
CLI's tour and the graph commands are in ``test_readme.py``; ``tests/unit/test_docs.py``
checks that every block has a test."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

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


def test_the_benchmark_commands_name_scripts_and_options_that_exist() -> None:
    found = block("docs/benchmarks.md", "Commands", "bash")
    lines = [w for w in (shlex.split(t, comments=True) for t in found.code.splitlines()) if w]
    assert len(lines) == 9
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for words in lines:
        assert words[0] == "python" and (ROOT / words[1]).is_file(), words
        shown = subprocess.run(
            [*argv(words[:2]), "--help"], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert shown.returncode == 0, (words, shown.stderr)
        for option in (w for w in words[2:] if w.startswith("--")):
            assert f"{option} " in shown.stdout or f"{option}\n" in shown.stdout, (words, option)
