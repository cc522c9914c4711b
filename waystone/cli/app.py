"""The ``waystone`` command's plumbing: the Typer app, the options every command shares,
how a command opens its runtime, prints its result and turns errors into exit codes."""

from __future__ import annotations

import getpass
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from waystone._hints import command
from waystone._json_input import parse_json_input
from waystone.cli.readable import ReadableGroup, VersionOpt
from waystone.config import Settings
from waystone.errors import (
    BadInput,
    DatabaseUnavailable,
    UnknownRun,
    UnknownThread,
    WaystoneError,
)

if TYPE_CHECKING:
    from waystone.runtime import Runtime

app = typer.Typer(
    name="waystone",
    cls=ReadableGroup,
    help="Durable execution for LangGraph agents on Postgres.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)
debug_app = typer.Typer(
    cls=ReadableGroup,
    help="Tools for testing Waystone itself.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)
app.add_typer(debug_app, name="debug")


@app.callback()
def _root(version: VersionOpt = False) -> None:
    del version  # handled, eagerly, by its callback


out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

JsonOpt = Annotated[
    bool, typer.Option("--json", envvar="WAYSTONE_JSON", help="Print one JSON object on stdout.")
]
DbOpt = Annotated[
    str | None,
    typer.Option(
        "--database-url",
        envvar="WAYSTONE_DATABASE_URL",
        help="Postgres URL; unset: the embedded server under WAYSTONE_HOME.",
    ),
]
ThreadArg = Annotated[str, typer.Argument(help="The run's thread id.")]
ByOpt = Annotated[
    str | None, typer.Option("--by", envvar="WAYSTONE_ACTOR", help="Who decides (default: $USER).")
]


def confirm_or_default(question: str, say: Callable[[str], None]) -> bool:
    """Ask; with no input to read (stdin at its end, not a terminal: `< /dev/null`, a
    script), take the default, yes, and say so. Ctrl-C at a terminal still aborts."""
    try:
        return typer.confirm(question, default=True, err=True)
    except typer.Abort:
        if sys.stdin.isatty():
            raise
        say("no answer on stdin: taking the default, yes")
        return True


def actor(by: str | None) -> str:
    if by:
        return by
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "cli"


def parse_json(text: str, what: str) -> Any:
    return parse_json_input(text, what)


def emit(as_json: bool, data: dict[str, Any], render: Callable[[], None]) -> None:
    if as_json:
        sys.stdout.write(json.dumps(data, default=str, sort_keys=True) + "\n")
    else:
        render()


@contextmanager
def open_runtime(database_url: str | None, migrate: bool | None = None) -> Iterator[Runtime]:
    from waystone.cli.agents import default_agents
    from waystone.runtime import Runtime  # imported by the commands that use it: --help is fast

    try:
        settings = Settings.from_env(database_url=database_url)
    except ValueError as exc:
        raise BadInput(str(exc)) from exc
    runtime = Runtime(settings, default_agents, migrate=migrate)
    try:
        yield runtime
    except UnknownThread as exc:
        raise _no_run_yet(runtime, exc) from None
    finally:
        runtime.close()


def _no_run_yet(rt: Runtime, exc: UnknownThread) -> UnknownThread:
    """An unknown thread, or :class:`UnknownRun` when the thread exists (made through the
    API) and has no run yet: "unknown thread" would send the user looking for a typo."""
    if type(exc) is not UnknownThread:
        return exc
    try:
        rt.thread(exc.thread_id)
    except UnknownThread:
        return exc
    start = command("start", "--graph", "NAME", "--thread-id", exc.thread_id, "--input", "{}")
    return UnknownRun(exc.thread_id, next_step=f"{start} starts one")


def fail(exc: WaystoneError) -> typer.Exit:
    err.print(f"[bold red]error:[/] {exc}", highlight=False)
    return typer.Exit(code=exc.exit_code)


def guard(fn: Callable[[], None]) -> None:
    """Run a command body, turning Waystone and database errors into clean exits."""
    import psycopg

    try:
        fn()
    except WaystoneError as exc:
        raise fail(exc) from None
    except psycopg.OperationalError as exc:
        raise fail(DatabaseUnavailable(f"Postgres is unreachable: {exc}")) from None
    except psycopg.DataError as exc:  # e.g. a NUL byte in a JSON string
        raise fail(BadInput(f"the input cannot be stored: {exc}")) from None
    except UnicodeEncodeError as exc:  # an argument that is not UTF-8 (argv's surrogates)
        raise fail(
            BadInput(f"an argument is not valid text at position {exc.start}: pass UTF-8")
        ) from None
