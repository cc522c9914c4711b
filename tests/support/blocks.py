"""The code blocks of the README and of ``docs/``, found by page and heading, and which test
runs each one. A fenced block with a language is code and must be run; an untagged fence
is a picture (the rings in ``docs/architecture.md``)."""

from __future__ import annotations

import re
import socket
import sys
from dataclasses import dataclass, field

from tests.conftest import ROOT

FENCE = re.compile(r"^```(\w*)\s*$")
HEADING = re.compile(r"^#{1,6} (.+)$")


@dataclass(frozen=True)
class Block:
    page: str  # its path from the project's root
    heading: str  # the nearest heading above it
    lang: str
    code: str
    line: int  # of its opening fence, from 1


@dataclass
class Line:
    command: str
    shown: list[str] = field(default_factory=list)  # the output the page shows under it


def pages() -> list[str]:
    return ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]


def blocks_of(page: str) -> list[Block]:
    found: list[Block] = []
    heading, lang, start = "", "", 0
    code: list[str] = []
    inside = False
    for number, text in enumerate((ROOT / page).read_text().splitlines(), start=1):
        fence = FENCE.match(text)
        if inside:
            if text.startswith("```"):
                found.append(Block(page, heading, lang, "".join(f"{c}\n" for c in code), start))
                inside = False
            else:
                code.append(text)
        elif fence:
            inside, lang, start, code = True, fence.group(1), number, []
        elif match := HEADING.match(text):
            heading = match.group(1)
    assert not inside, f"{page}: the block at line {start} is never closed"
    return found


def code_blocks() -> list[Block]:
    return [b for p in pages() for b in blocks_of(p) if b.lang]


def block(page: str, heading: str, lang: str) -> Block:
    """The one block of ``lang`` under ``heading`` on ``page``."""
    [found] = [b for b in blocks_of(page) if (b.heading, b.lang) == (heading, lang)]
    return found


def console(found: Block) -> list[Line]:
    """A console block's commands, each with the lines it shows."""
    lines: list[Line] = []
    for text in found.code.splitlines():
        if text.startswith("$ "):
            lines.append(Line(text[2:]))
        else:
            lines[-1].shown.append(text)
    return lines


GENERIC = "tests/acceptance/test_docs_blocks.py::test_a_python_block_runs"
# Blocks that need more than a new interpreter (a server, a run in a given state, a
# directory with a file beside them): the test that runs each, with that plumbing.
RUN_BY: dict[tuple[str, str, str], str] = {
    ("README.md", "Waystone", "bash"): "tests/acceptance/test_readme.py::"
    "test_the_first_command_runs_the_demo_on_the_embedded_postgres",
    ("README.md", "Bring your LangGraph graph", "python"): "tests/acceptance/test_readme.py::"
    "test_the_first_example_runs_twice_in_a_row",
    ("README.md", "Bring your LangGraph graph", "json"): "tests/acceptance/test_readme.py::"
    "test_the_readme_langgraph_json_names_the_graphs",
    ("README.md", "The LangGraph server API", "console"): "tests/acceptance/test_readme.py::"
    "test_the_readme_langgraph_api_section_runs_as_written",
    ("README.md", "The LangGraph server API", "py"): "tests/acceptance/test_readme.py::"
    "test_the_readme_langgraph_api_section_runs_as_written",
    ("docs/cli.md", "A 30-second tour", "console"): "tests/acceptance/test_readme.py::"
    "test_the_tour_typed_in_a_new_directory_ends_done",
    ("docs/graphs.md", "From the command line", "console"): "tests/acceptance/test_readme.py::"
    "test_the_graph_commands_run_as_written_twice",
    ("docs/api.md", "Crons", "py"): "tests/acceptance/test_api_crons.py::"
    "test_the_docs_cron_example_runs_as_written",
    ("docs/tools.md", "Settling a call by hand", "bash"): "tests/acceptance/test_docs_blocks.py::"
    "test_the_settle_commands_run_as_written",
    ("docs/benchmarks.md", "Commands", "bash"): "tests/acceptance/test_docs_blocks.py::"
    "test_the_benchmark_commands_name_scripts_and_options_that_exist",
}


def runner(found: Block) -> str | None:
    """The test that runs ``found``; a python block with no plumbing runs as it is."""
    named = RUN_BY.get((found.page, found.heading, found.lang))
    if named is None and found.lang == "python":
        return GENERIC
    return named


def argv(words: list[str]) -> list[str]:
    """A page's command as this interpreter runs it (the installed ``waystone`` included)."""
    if words[0] == "waystone":
        return [sys.executable, "-m", "waystone", *words[1:]]
    if words[0] in ("python3", "python"):
        return [sys.executable, *words[1:]]
    raise AssertionError(f"the pages run only waystone and python3, not {words[0]}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
