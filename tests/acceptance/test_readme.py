"""The README runs as written. Its tour is typed, line by line, in a new directory (each
command a new process; the line ending in ``&`` in the background), and ends ``done``;
every line of output the README shows is printed. Each ``python`` block runs in a new
interpreter. Only the test's own plumbing is substituted: the thread id the tour's
``start`` prints, a free port for the provider's 8700 (the agent is told it, as
``WAYSTONE_PAYMENTS_URL`` tells it), and the test's database for the embedded one."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import ROOT
from waystone.examples import refund
from waystone.examples.provider import ProviderProcess

README = (ROOT / "README.md").read_text()
EXAMPLE_ID = "refund-3f1c2a9d0b7e"
TOUR_PORT = "8700"


@dataclass
class Line:
    command: str
    shown: list[str] = field(default_factory=list)  # the output the README shows under it


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def tour() -> list[Line]:
    return console("A 30-second tour")


def console(title: str) -> list[Line]:
    """The lines of the first console block under a heading, each with what it shows."""
    block = re.search(r"```console\n(.*?)```", section(title), re.DOTALL)
    assert block is not None
    lines: list[Line] = []
    for text in block.group(1).splitlines():
        if text.startswith("$ "):
            lines.append(Line(text[2:]))
        else:
            lines[-1].shown.append(text)
    return lines


def python_blocks() -> list[tuple[str, str]]:
    """(the heading above it, the code) of every python block."""
    found = []
    for match in re.finditer(r"```python\n(.*?)```", README, re.DOTALL):
        heading = re.findall(r"^## (.+)$", README[: match.start()], re.MULTILINE)[-1]
        found.append((heading, match.group(1)))
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def argv(words: list[str]) -> list[str]:
    """The installed commands as this interpreter runs them."""
    if words[0] == "waystone":
        return [sys.executable, "-m", "waystone", *words[1:]]
    if words[0] == "python3":
        return [sys.executable, *words[1:]]
    raise AssertionError(f"the tour runs only waystone and python3, not {words[0]}")


@pytest.fixture
def new_directory(tmp_path: Path, database_url: str) -> Iterator[tuple[Path, dict[str, str]]]:
    """A directory of its own, and a user's environment: no WAYSTONE_HOME (the default,
    ./.waystone, holds the vault key and the provider's file) and no provider URL."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WAYSTONE_")}
    env["WAYSTONE_DATABASE_URL"] = database_url  # in place of the embedded server
    env["WAYSTONE_ACTOR"] = "ana"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    yield tmp_path, env


def test_the_tour_uses_the_port_the_agent_looks_at() -> None:
    assert urlsplit(refund.DEFAULT_PAYMENTS_URL).port == int(TOUR_PORT)
    assert f"--port {TOUR_PORT} &" in tour()[0].command


def test_the_readme_tour_typed_in_a_new_directory_ends_done(
    new_directory: tuple[Path, dict[str, str]],
) -> None:
    cwd, env = new_directory
    port = str(free_port())
    env["WAYSTONE_PAYMENTS_URL"] = f"http://127.0.0.1:{port}"
    background: list[subprocess.Popen[str]] = []
    thread_id = EXAMPLE_ID
    try:
        for line in tour():
            words = shlex.split(
                line.command.replace(f"--port {TOUR_PORT}", f"--port {port}"), comments=True
            )
            words = [thread_id if w == EXAMPLE_ID else w for w in words]
            shown = [s.replace(EXAMPLE_ID, thread_id).replace(TOUR_PORT, port) for s in line.shown]
            if words[-1] == "&":
                proc = subprocess.Popen(
                    argv(words[:-1]), cwd=cwd, env=env, stdout=subprocess.PIPE, text=True
                )
                background.append(proc)
                assert proc.stdout is not None
                printed = proc.stdout.readline()  # it has started once it says so
                assert printed.rstrip("\n") == shown[0]
                continue
            done = subprocess.run(argv(words), cwd=cwd, env=env, capture_output=True, text=True)
            assert done.returncode == 0, (line.command, done.stdout, done.stderr)
            if words[1] == "start":
                thread_id = done.stdout.split()[0]
                shown = [s.replace(EXAMPLE_ID, thread_id) for s in line.shown]
            printed = done.stdout.splitlines()
            missing = [s for s in shown if s not in printed]
            assert not missing, (line.command, missing, done.stdout)
        final = subprocess.run(
            argv(["waystone", "status", thread_id]),
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
        )
        assert final.stdout.splitlines()[0] == f"{thread_id}  done  (refund)"
        assert (cwd / ".waystone" / "payments.sqlite3").exists()  # the provider's default
    finally:
        for proc in background:
            proc.terminate()
            proc.wait(timeout=60)
            assert proc.stdout is not None
            proc.stdout.close()


def test_the_readme_graph_commands_run_as_written_twice(
    new_directory: tuple[Path, dict[str, str]],
) -> None:
    cwd, env = new_directory
    for line in console("Bring your LangGraph graph") * 2:  # the second time: run 2
        words = shlex.split(line.command, comments=True)
        if words[0] == "export":
            name, _, value = words[1].partition("=")
            env[name] = value
            continue
        done = subprocess.run(argv(words), cwd=cwd, env=env, capture_output=True, text=True)
        assert done.returncode == 0, (line.command, done.stdout, done.stderr)
        printed = done.stdout.splitlines()
        missing = [s for s in line.shown if s not in printed]
        assert not missing, (line.command, missing, done.stdout)


def test_the_first_example_runs_twice_in_a_row(
    new_directory: tuple[Path, dict[str, str]],
) -> None:
    """The README's first example, as a user runs it again in the same database."""
    cwd, env = new_directory
    code = python_blocks()[0][1]
    assert python_blocks()[0][0] == "Bring your LangGraph graph"
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        printed = done.stdout.splitlines()
        assert printed[0].startswith("waiting [{'id': ") and printed[1:] == ["done", "[1, 2]"]


def test_the_readme_langgraph_json_names_the_graphs(
    new_directory: tuple[Path, dict[str, str]],
) -> None:
    """The README's langgraph.json, in a new directory beside the file it names."""
    cwd, env = new_directory
    block = re.search(r"```json\n(.*?)```", section("Bring your LangGraph graph"), re.DOTALL)
    assert block is not None
    (cwd / "langgraph.json").write_text(block.group(1))
    graphs = json.loads(block.group(1))["graphs"]
    assert graphs == {"support": "./agent.py:builder"}
    (cwd / "agent.py").write_text("from waystone.examples.support import builder\n")
    ask = json.dumps({"question": "hi"})
    start = ["waystone", "start", "--graph", "support", "--thread-id", "t-1", "--input", ask]
    for words, shown in ((start, "queued"), (["waystone", "run", "t-1"], "waiting")):
        done = subprocess.run(argv(words), cwd=cwd, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert f"t-1  {shown}  (support)" in done.stdout.splitlines(), done.stdout


@pytest.mark.parametrize(
    "code", [code for _, code in python_blocks()], ids=[h for h, _ in python_blocks()]
)
def test_a_readme_python_block_runs(
    code: str, new_directory: tuple[Path, dict[str, str]], provider: ProviderProcess
) -> None:
    cwd, env = new_directory
    env["WAYSTONE_PAYMENTS_URL"] = provider.url
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_the_python_blocks_are_found() -> None:
    headings = [h for h, _ in python_blocks()]
    assert {
        "Bring your LangGraph graph",
        "From Python and notebooks",
        "Plug in a model and a tool",
    } <= set(headings)


def test_the_readme_langgraph_api_section_runs_as_written(
    new_directory: tuple[Path, dict[str, str]],
) -> None:
    """Its worker and server started as the README starts them, then its SDK example."""
    cwd, env = new_directory
    port = str(free_port())
    background: list[subprocess.Popen[str]] = []
    try:
        for line in console("The LangGraph server API"):
            words = shlex.split(line.command.replace("--port 2024", f"--port {port}"))
            if words[0] == "export":
                env.update(w.partition("=")[::2] for w in words[1:])
                continue
            assert words[-1] == "&", line.command
            proc = subprocess.Popen(
                argv(words[:-1]), cwd=cwd, env=env, stdout=subprocess.PIPE, text=True
            )
            background.append(proc)
            if line.shown:
                assert proc.stdout is not None
                assert proc.stdout.readline().rstrip("\n") == line.shown[0].replace("2024", port)
        block = re.search(r"```py\n(.*?)```", section("The LangGraph server API"), re.DOTALL)
        assert block is not None
        code = block.group(1).replace("127.0.0.1:2024", f"127.0.0.1:{port}")
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert "reviewer said ship it" in done.stdout.splitlines()[-1], done.stdout
    finally:
        for proc in background:
            proc.terminate()
            proc.communicate(timeout=30)
