"""What a command loads before it answers. The commands that only read (``--help``,
``status``, ``list``) load neither LangGraph nor langchain-core nor an HTTP client, nor the
agents, their tools and their pydantic models; the example provider loads nothing of
Waystone's runtime. Each answers in a fraction of the time that loading them takes
(``scripts/bench_cli.py`` measures it)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from tests.conftest import REFUND_INPUT, ROOT, Cli
from waystone.examples.provider import ProviderProcess

HEAVY = ("langgraph", "langchain_core", "langsmith", "httpx")
DRIVING = (  # what drives a run: the agents, their tools, the graph, its nodes, the saver
    "waystone.preset.spec",
    "waystone.examples.refund",
    "waystone.effects",
    "waystone.preset._graph.builder",
    "waystone.preset._nodes",
    "waystone._checkpointing.saver",
)
IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", re.MULTILINE)


def imported(stderr: str) -> set[str]:
    """The modules a process imported, from what ``-X importtime`` printed."""
    return set(IMPORTED.findall(stderr))


def heavy(modules: set[str]) -> list[str]:
    # LangGraph's serializer protocol (a few lines, which the sealer implements) weighs nothing
    light = {"langgraph", "langgraph.checkpoint", "langgraph.checkpoint.serde"}
    light.add("langgraph.checkpoint.serde.base")
    return sorted(m for m in modules - light if m.split(".")[0] in HEAVY or m.startswith(DRIVING))


def test_help_status_and_list_import_neither_langgraph_nor_the_agents(
    cli: Cli, provider: ProviderProcess
) -> None:
    started = cli("start", "--agent", "refund", "--input", json.dumps(REFUND_INPUT), "--json")
    thread_id = json.loads(started.stdout)["thread_id"]
    assert cli("run", thread_id).returncode == 0
    profile = {"PYTHONPROFILEIMPORTTIME": "1"}
    for args in (["--help"], ["status", thread_id], ["list"]):
        result = cli(*args, env=profile)
        assert result.returncode == 0, result.stderr
        modules = imported(result.stderr)
        assert "waystone.cli" in modules  # the profile is read
        assert heavy(modules) == [], args
    assert "waiting for approval of refund" in cli("status", thread_id).stdout


def test_the_example_provider_imports_nothing_of_waystones_runtime() -> None:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "waystone.examples.payments", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    modules = imported(result.stderr)
    assert "http.server" in modules  # the profile is read (the module itself is __main__)
    ours = sorted(m for m in modules if m.split(".")[0] == "waystone")
    assert ours == ["waystone", "waystone.examples", "waystone.sql"]  # its statements' reader
    assert not [m for m in modules if m.split(".")[0] in {*HEAVY, "psycopg", "pydantic", "typer"}]
