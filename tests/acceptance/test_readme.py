"""The README runs as written, and so do the CLI's tour and the graph commands of the docs.
The first command runs the demo on an embedded Postgres of its own. The tour is typed,
line by line, in a new directory (each command a new process; the line ending in ``&`` in
the background), and ends ``done``; every line of output the page shows is printed. Only
the test's own plumbing is substituted: the thread id the tour's ``start`` prints, a free
port for the provider's 8700 (the agent is told it, as ``WAYSTONE_PAYMENTS_URL`` tells
it) and the API's 2024, and the test's database for the embedded one."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

from tests.conftest import ROOT
from tests.support.blocks import Line, argv, block, blocks_of, console, free_port
from waystone.examples import refund

EXAMPLE_ID = "refund-3f1c2a9d0b7e"
TOUR_PORT = "8700"


def tour() -> list[Line]:
    return console(block("docs/cli.md", "A 30-second tour", "console"))


def test_the_first_command_runs_the_demo_on_the_embedded_postgres() -> None:
    """The README's first command after its install (the suite runs on that install, as
    ``.ci/run`` makes it): the demo in a new directory with no database named, on the
    embedded Postgres it starts under ``./.waystone``, answered as a script answers it."""
    first = block("README.md", "Waystone", "bash")
    assert first == blocks_of("README.md")[0]
    [command] = [c for c in first.code.splitlines() if " && " in c]
    install, _, demo = command.partition(" && ")
    assert install == "python3 -m pip install -e ."
    env = {k: v for k, v in os.environ.items() if not k.startswith("WAYSTONE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    cwd = Path(tempfile.mkdtemp(prefix="ws-demo-", dir="/tmp"))  # short: a socket's path
    try:
        done = subprocess.run(
            argv(shlex.split(demo)), cwd=cwd, env=env, input="", capture_output=True, text=True
        )
        assert done.returncode == 0, (done.stdout, done.stderr)
        printed = done.stdout.splitlines()
        data = cwd / ".waystone" / "pgdata"
        assert printed[0].endswith(f"; database postgresql://postgres:@/postgres?host={data}")
        assert "provider ledger: 1 refund(s), 1 notification(s)" in printed
        thread_id = printed[1].split()[1].rstrip(":")
        assert printed[-2:] == [
            f"{thread_id}  done  (refund)",
            "  reason: goal verified: all checks pass",
        ]
    finally:
        stop = subprocess.run(
            argv(["waystone", "db", "stop"]), cwd=cwd, env=env, capture_output=True, text=True
        )
        shutil.rmtree(cwd, ignore_errors=True)
    assert stop.returncode == 0 and "stopped the server" in stop.stdout, stop.stderr


def test_the_tour_uses_the_port_the_agent_looks_at() -> None:
    assert urlsplit(refund.DEFAULT_PAYMENTS_URL).port == int(TOUR_PORT)
    assert f"--port {TOUR_PORT} &" in tour()[0].command


def test_the_tour_typed_in_a_new_directory_ends_done(
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


def test_the_graph_commands_run_as_written_twice(
    new_directory: tuple[Path, dict[str, str]],
) -> None:
    cwd, env = new_directory
    commands = console(block("docs/graphs.md", "From the command line", "console"))
    for line in commands * 2:  # the second time: run 2
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
    code = block("README.md", "Bring your LangGraph graph", "python").code
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
    given = block("README.md", "Bring your LangGraph graph", "json").code
    (cwd / "langgraph.json").write_text(given)
    graphs = json.loads(given)["graphs"]
    assert graphs == {"support": "./agent.py:builder"}
    (cwd / "agent.py").write_text("from waystone.examples.support import builder\n")
    ask = json.dumps({"question": "hi"})
    start = ["waystone", "start", "--graph", "support", "--thread-id", "t-1", "--input", ask]
    for words, shown in ((start, "queued"), (["waystone", "run", "t-1"], "waiting")):
        done = subprocess.run(argv(words), cwd=cwd, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert f"t-1  {shown}  (support)" in done.stdout.splitlines(), done.stdout


def test_the_readme_langgraph_api_section_runs_as_written(
    new_directory: tuple[Path, dict[str, str]],
) -> None:
    """Its worker and server started as the README starts them, then its SDK example."""
    cwd, env = new_directory
    port = str(free_port())
    background: list[subprocess.Popen[str]] = []
    try:
        for line in console(block("README.md", "The LangGraph server API", "console")):
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
        client = block("README.md", "The LangGraph server API", "py").code
        code = client.replace("127.0.0.1:2024", f"127.0.0.1:{port}")
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert "reviewer said ship it" in done.stdout.splitlines()[-1], done.stdout
    finally:
        for proc in background:
            proc.terminate()
            proc.communicate(timeout=30)
