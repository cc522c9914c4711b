"""The documents the project names are in the project: every ``NAME.md`` that the README,
the docs, the code and the SQL refer to exists (at the root or in ``docs/``)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import ROOT

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
