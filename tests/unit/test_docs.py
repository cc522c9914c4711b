"""The documents the project names are in the project: every ``NAME.md`` that the README,
the docs, the code and the SQL refer to exists (at the root or in ``docs/``). The README is
a front door, and every code block of it and of the docs has a test that runs it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tests.conftest import ROOT
from tests.support.blocks import GENERIC, block, blocks_of, code_blocks, console, fetched, runner

NAMED = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[\w-]+\.md)\b")


def sources() -> list[Path]:
    found = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "scripts").glob("*")]
    found += [*(ROOT / "waystone").rglob("*.py"), *(ROOT / "waystone").rglob("*.sql")]
    return [p for p in found if p.is_file()]


def test_every_document_the_project_names_is_in_the_project() -> None:
    missing = []
    for path in sources():
        for name in NAMED.findall(path.read_text()):
            candidates = [ROOT / name, ROOT / "docs" / name, path.parent / name]
            if not any(c.is_file() for c in candidates):
                missing.append(f"{path.relative_to(ROOT)}: {name}")
    assert not missing, "\n".join(missing)


def test_the_scan_finds_the_names() -> None:
    assert "docs/benchmarks.md" in NAMED.findall((ROOT / "README.md").read_text())


def test_the_readme_is_a_front_door_that_opens_with_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    first = blocks_of("README.md")[0]
    commands = [c for c in (shlex.split(t, comments=True) for t in first.code.splitlines()) if c]
    assert first.lang == "bash" and commands == [
        ["python3", "-m", "pip", "install", "-e", ".", "&&", "python3", "-m", "waystone", "demo"],
        ["bash", "scripts/test.sh"],
    ]
    assert "\nbash scripts/test.sh\n" in (ROOT / ".ci" / "run").read_text()  # CI runs the 2nd


def test_every_code_block_of_the_readme_and_the_docs_is_run_by_a_test() -> None:
    by_name = fetched()
    found = code_blocks()
    unrun = [f"{b.page}:{b.line} ({b.heading}, {b.lang})" for b in found if not runner(b, by_name)]
    assert not unrun, "no test runs these blocks: fetch each with block(page, heading, lang)\n" + (
        "\n".join(unrun)
    )
    assert all(sum((b.page, b.heading, b.lang) == key for b in found) == 1 for key in by_name)
    path, _, name = GENERIC.partition("::")
    assert f"\ndef {name}(" in (ROOT / path).read_text()
    assert set(by_name.values()) == {
        "tests/acceptance/test_api_assistants.py",
        "tests/acceptance/test_api_crons.py",
        "tests/acceptance/test_api_mcp.py",
        "tests/acceptance/test_docs_blocks.py",
        "tests/acceptance/test_readme.py",
    }


def test_blocks_are_found_by_page_and_heading() -> None:
    tour = block("docs/cli.md", "A 30-second tour", "console")
    assert console(tour)[0].command.startswith("python3 -m waystone.examples.payments")
    assert [b.heading for b in blocks_of("docs/architecture.md")] == ["2. The rings"]
    assert not blocks_of("docs/architecture.md")[0].lang  # a picture, not code
