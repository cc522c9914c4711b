"""The code blocks of the README and of ``docs/``, found by page and heading, and which test
runs each one. A fenced block with a language is code and must be run; an untagged or
``text`` fence is a picture or a message shown (the rings in ``docs/architecture.md``)."""

from __future__ import annotations

import ast
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
    return [b for p in pages() for b in blocks_of(p) if b.lang not in ("", "text")]


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


def fetched() -> dict[tuple[str, str, str], str]:
    """The blocks an acceptance test fetches by name, ``block(page, heading, lang)``, to run
    with the plumbing it needs (a server, a run in a given state, a file beside it): the
    test module of each."""
    found: dict[tuple[str, str, str], str] = {}
    for path in sorted((ROOT / "tests" / "acceptance").glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            words = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if node.func.id == "block" and len(words) == 3 == len(node.args):
                page, heading, lang = (str(w) for w in words)
                found[(page, heading, lang)] = str(path.relative_to(ROOT))
    return found


def runner(found: Block, by_name: dict[tuple[str, str, str], str]) -> str | None:
    """The test module that runs ``found``; a python block no test fetches runs as it is."""
    named = by_name.get((found.page, found.heading, found.lang))
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
