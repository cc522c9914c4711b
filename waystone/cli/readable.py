"""How ``--help`` and ``--version`` read.

Typer labels every parameter with its Python type (``--run <bool>``, ``thread_id <str>``).
:class:`ReadableGroup` gives the classic labels instead: a flag shows none, an option the
kind of value it takes (``--limit INTEGER``), an argument its name (``THREAD_ID``).
"""

from __future__ import annotations

from importlib import metadata
from typing import Annotated, Any

import typer
from typer.core import TyperArgument, TyperGroup, TyperOption


class _NamedArgument(TyperArgument):
    """An argument labelled by its name alone: no type beside it."""

    def display_type_rich(self, ctx: Any) -> str | None:
        del ctx
        return None


# Python's type names as a command line says them; a flag takes no value, so shows none
_KINDS = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "Path": "PATH", "bool": ""}


def readable(command: Any, ctx: Any) -> None:
    """Label ``command``'s parameters and its ``--help`` (an explicit ``metavar`` is kept)."""
    for param in [*command.params, command.get_help_option(ctx)]:
        if isinstance(param, TyperArgument):
            param.metavar = param.metavar or str(param.name).upper()
            if type(param) is TyperArgument:
                param.__class__ = _NamedArgument
        elif isinstance(param, TyperOption) and param.metavar is None:
            kind = "bool" if param.is_flag else param.bare_type()
            kind = kind.removeprefix("list[").removesuffix("]")  # repeated: one value each
            param.metavar = _KINDS.get(kind, kind.upper())


class ReadableGroup(TyperGroup):
    """A command group whose commands, and itself, are labelled by :func:`readable`."""

    def get_help_option(self, ctx: Any) -> Any:
        readable_self = super().get_help_option(ctx)
        for param in [*self.params, readable_self]:
            if isinstance(param, TyperOption) and param.metavar is None:
                param.metavar = ""  # a group's own options are flags (--help, --version)
        return readable_self

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None and not isinstance(command, TyperGroup):
            readable(command, ctx)  # a group labels itself
        return command


def version() -> str:
    try:
        return metadata.version("waystone")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"waystone {version()}")
        raise typer.Exit()


VersionOpt = Annotated[
    bool,
    typer.Option(
        "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
    ),
]
