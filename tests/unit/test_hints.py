"""Every ``waystone`` command a message names runs as printed: each one written in the code
(a literal in backticks, or built by :func:`waystone._hints.command`) is parsed by the
CLI's own parser, with what the code fills in at run time given a sample value."""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Iterator
from typing import Any

import pytest
import typer
import typer.main

from tests.conftest import ROOT
from waystone._hints import command, decide_commands, requeue_command, settle_commands
from waystone.cli import app

try:  # typer vendors click from 0.2x on, and its parser raises that click's errors
    from typer._click.exceptions import UsageError
except ImportError:  # pragma: no cover - an older typer, on click itself
    from click import UsageError  # type: ignore[assignment]

SAMPLE = "refund-3f1c2a9d0b7e"  # what a placeholder (an f-string's field, a variable) becomes
IN_BACKTICKS = re.compile(r"(?<!`)`waystone ([^`]+)`(?!`)")


def _text(node: ast.expr) -> str | None:
    """A string literal's text, an f-string's with every field as SAMPLE."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            part.value if isinstance(part, ast.Constant) else SAMPLE for part in node.values
        )
    return None


def _named(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else None


def hints_in_code() -> Iterator[tuple[str, list[str]]]:
    """(where, argv) of every command Waystone's code names in a message."""
    for path in sorted((ROOT / "waystone").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        skip = {  # docstrings, and the parts of an f-string (read as the whole)
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        } | {
            id(part)
            for node in ast.walk(tree)
            if isinstance(node, ast.JoinedStr)
            for part in node.values
        }
        for node in ast.walk(tree):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.Call) and _named(node) == "command":
                args = [_text(a) or SAMPLE for a in node.args]
                yield where, args
            elif (
                isinstance(node, ast.Constant | ast.JoinedStr)
                and id(node) not in skip
                and path.name != "_hints.py"  # the template of every hint, not a hint
            ):
                text = _text(node)
                for found in IN_BACKTICKS.finditer(text or ""):
                    yield where, shlex.split(found.group(1))


def parse(argv: list[str]) -> None:
    """Parse ``waystone ARGV`` as the CLI would, without running it (UsageError if not)."""
    cmd: Any = typer.main.get_command(app)
    name, ctx = "waystone", None
    while hasattr(cmd, "get_command"):  # a group: the next word names its command
        ctx = typer.Context(cmd, info_name=name, parent=ctx)
        if not argv:
            raise UsageError(f"{name} needs a command")
        name, argv = argv[0], argv[1:]
        cmd = cmd.get_command(ctx, name)
        if cmd is None:
            raise UsageError(f"no such command: {name}")
    cmd.make_context(name, list(argv), parent=ctx)


def test_the_cli_hints_name_commands_that_parse_as_printed() -> None:
    hints = list(hints_in_code())
    assert len(hints) >= 10, hints  # the scan finds the hints (a change of form would hide them)
    broken = []
    for where, argv in hints:
        try:
            parse(argv)
        except UsageError as exc:
            broken.append(f"{where}: waystone {shlex.join(argv)}: {exc.format_message()}")
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize(
    "hints",
    [
        requeue_command(SAMPLE),
        decide_commands(SAMPLE),
        requeue_command("my run; rm x"),
        settle_commands(SAMPLE, SAMPLE),
    ],
)
def test_the_built_hints_parse_with_their_thread_id(hints: str) -> None:
    for found in IN_BACKTICKS.finditer(hints):
        argv = shlex.split(found.group(1))
        parse(argv)
        assert argv[1] in (SAMPLE, "my run; rm x")  # quoted: one argument, as given


def test_parse_refuses_what_the_cli_refuses() -> None:
    with pytest.raises(UsageError):
        parse(["requeue"])  # no thread id, no --reason
    with pytest.raises(UsageError):
        parse(["requeue", SAMPLE])  # no --reason
    with pytest.raises(UsageError):
        parse(["debug"])
    parse(["debug", "crash-points"])
    assert command("list") == "`waystone list`"
