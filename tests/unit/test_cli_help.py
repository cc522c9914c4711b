"""Every command's ``--help`` labels its parameters the classic way: no Python types."""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from waystone.cli import app


def _paths(command: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [prefix]
    for name, sub in getattr(command, "commands", {}).items():
        found += _paths(sub, (*prefix, name))
    return found


COMMANDS = _paths(typer.main.get_command(app))


def test_every_command_is_listed() -> None:
    assert {("approve",), ("db", "stop"), ("debug", "crash-points"), ()} <= set(COMMANDS)


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "waystone")
def test_help_shows_no_python_types(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    for label in ("<bool>", "<str>", "<int>", "<float>", "<path>", "list["):
        assert label not in result.output, f"{label} in:\n{result.output}"
