"""``waystone``: the command line. Every command takes ``--json`` and ``--database-url``.

Errors go to stderr with a non-zero exit: 2 bad input, 3 unknown thread, 4 transition not
allowed, 5 lease lost, 6 database unavailable, 7 the run a command drove ended ``failed``
or ``needs-human``.
"""

from __future__ import annotations

import getpass
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from waystone.approval import edited_args
from waystone.cli.readable import ReadableGroup, VersionOpt
from waystone.config import Settings
from waystone.errors import BadInput, DatabaseUnavailable, RunStopped, WaystoneError
from waystone.hints import command, decide_commands, requeue_command
from waystone.json_input import parse_json_input

if TYPE_CHECKING:
    from waystone.runtime import RunStatus, Runtime

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


def _confirm_or_default(question: str, say: Callable[[str], None]) -> bool:
    """Ask; with no input to read (stdin at its end, not a terminal: `< /dev/null`, a
    script), take the default, yes, and say so. Ctrl-C at a terminal still aborts."""
    try:
        return typer.confirm(question, default=True, err=True)
    except typer.Abort:
        if sys.stdin.isatty():
            raise
        say("no answer on stdin: taking the default, yes")
        return True


def _actor(by: str | None) -> str:
    if by:
        return by
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "cli"


def _parse_json(text: str, what: str) -> Any:
    return parse_json_input(text, what)


def _emit(as_json: bool, data: dict[str, Any], render: Callable[[], None]) -> None:
    if as_json:
        sys.stdout.write(json.dumps(data, default=str, sort_keys=True) + "\n")
    else:
        render()


@contextmanager
def _runtime(database_url: str | None) -> Iterator[Runtime]:
    from waystone.runtime import Runtime  # imported by the commands that use it: --help is fast

    try:
        settings = Settings.from_env(database_url=database_url)
    except ValueError as exc:
        raise BadInput(str(exc)) from exc
    runtime = Runtime(settings)
    try:
        yield runtime
    finally:
        runtime.close()


def _fail(exc: WaystoneError) -> typer.Exit:
    err.print(f"[bold red]error:[/] {exc}", highlight=False)
    return typer.Exit(code=exc.exit_code)


def _guard(fn: Callable[[], None]) -> None:
    """Run a command body, turning Waystone and database errors into clean exits."""
    import psycopg

    try:
        fn()
    except WaystoneError as exc:
        raise _fail(exc) from None
    except psycopg.OperationalError as exc:
        raise _fail(DatabaseUnavailable(f"Postgres is unreachable: {exc}")) from None
    except psycopg.DataError as exc:  # e.g. a NUL byte in a JSON string
        raise _fail(BadInput(f"the input cannot be stored: {exc}")) from None
    except UnicodeEncodeError as exc:  # an argument that is not UTF-8 (argv's surrogates)
        raise _fail(
            BadInput(f"an argument is not valid text at position {exc.start}: pass UTF-8")
        ) from None


def _render_status(status: RunStatus) -> None:
    colour = {"done": "green", "failed": "red", "waiting": "yellow", "needs-human": "magenta"}.get(
        status.state, "cyan"
    )
    out.print(f"[bold]{status.thread_id}[/]  [{colour}]{status.state}[/]  ({status.agent})")
    out.print(f"  reason: {status.reason}", highlight=False)
    if status.lease is not None:
        out.print(f"  lease: {_lease_line(status.thread_id, status.lease)}", highlight=False)
    if status.step:
        out.print(f"  next step: {status.step}")
    if status.pending_approval:
        p = status.pending_approval
        out.print(
            f"  [yellow]waiting for approval[/] of [bold]{escape(str(p['tool']))}[/] "
            f"{escape(json.dumps(p['args']))}",
            highlight=False,
        )
        out.print(
            f"    why: {p['reason']}\n    key: {p['idempotency_key']}\n    digest: {p['digest']}",
            highlight=False,
        )
        hint = (
            f"decision recorded; {command('run', status.thread_id)} (or a worker) resumes it"
            if status.decision_recorded
            else decide_commands(status.thread_id)
        )
        out.print(f"    next: {hint}", highlight=False)
    elif status.interrupts:
        for pending in status.interrupts:
            out.print(
                f"  [yellow]interrupt[/] {pending['id']}: {escape(json.dumps(pending['value']))}",
                highlight=False,
            )
        which = " and --interrupt-id" if len(status.interrupts) > 1 else ""
        out.print(
            f"    next: {command('resume', status.thread_id)} with --value (the answer, as "
            f"JSON){which}",
            highlight=False,
        )
    elif status.state in STOPPED:
        out.print(
            f"  next: {command('history', status.thread_id)} says why; "
            f"{requeue_command(status.thread_id)} resumes it",
            highlight=False,
        )


STOPPED = ("failed", "needs-human")


def _settled(status: RunStatus) -> None:
    """A run this command drove that ended without reaching its goal exits 7 (the status
    is printed first): a script can tell it from a run that is done or waits."""
    if status.state in STOPPED:
        raise _fail(RunStopped(f"run {status.thread_id} ended {status.state}: {status.reason}"))


def _lease_line(thread_id: str, lease: dict[str, Any]) -> str:
    """Who holds a running run and until when: an expired lease means its holder stopped
    (killed, cut off) and the run is free for the next claim."""
    seconds = lease["expires_in_s"]
    if lease["owner"] is None or seconds is None:
        return f"none (handed back): any worker, or `waystone run {thread_id}`, takes the run"
    if not lease["expired"]:
        return f"held by {lease['owner']}, expires in {seconds:.0f}s"
    return (
        f"held by {lease['owner']}, expired {-seconds:.0f}s ago: its holder stopped; any "
        f"worker, or `waystone run {thread_id}`, takes the run over"
    )


def _render_history(history: dict[str, Any]) -> None:
    out.print(
        f"[bold]{history['thread_id']}[/]  {history['state']}: {history['reason']}", highlight=False
    )
    if len(history["runs"]) > 1:
        runs = Table("run", "run id", "state", "reason")
        for run in history["runs"]:
            runs.add_row(str(run["run"]), run["run_id"], run["state"], run["reason"])
        out.print(runs)
    table = Table("#", "run", "at", "kind", "what", show_lines=False)
    for event in history["events"]:
        what = event["reason"]
        if event["kind"] == "transition":
            what = f"{event['from_state'] or '∅'} -> {event['to_state']}: {what}"
        table.add_row(
            str(event["id"]),
            str(event["run"]),
            str(event["created_at"])[11:23],
            event["kind"],
            what,
        )
    out.print(table)
    steps = Table("step", "checkpoint", "after", "next")
    for cp in history["checkpoints"]:
        steps.add_row(
            str(cp["step"]), cp["checkpoint_id"], ", ".join(cp["after"]), ", ".join(cp["next"])
        )
    out.print(steps)
    effects = Table("effect key", "tool", "status", "attempts", "receipt")
    for e in history["effects"]:
        effects.add_row(
            e["key"],
            e["tool"],
            e["status"],
            str(e["attempts"]),
            str((e["receipt"] or {}).get("id", "")),
        )
    out.print(effects)


@app.command()
def start(
    input: Annotated[str, typer.Option("--input", help="The run's input, as JSON.")],
    agent: Annotated[
        str | None, typer.Option("--agent", help="The agent to run, e.g. refund.")
    ] = None,
    graph: Annotated[
        str | None, typer.Option("--graph", help="The graph to run (WAYSTONE_GRAPHS names it).")
    ] = None,
    goal: Annotated[str | None, typer.Option("--goal", help="The goal, in words.")] = None,
    thread_id: Annotated[str | None, typer.Option("--thread-id", help="Choose the id.")] = None,
    key: Annotated[str | None, typer.Option("--key", help="Start once per key.")] = None,
    as_json: JsonOpt = False,
    database_url: DbOpt = None,
) -> None:
    """Create a queued run and print its thread id. An agent's input is a JSON object; a
    graph's is passed to it as it is."""

    def body() -> None:
        if (agent is None) == (graph is None):
            raise BadInput("give one of --agent NAME or --graph NAME")
        data = _parse_json(input, "--input")
        name = agent if agent is not None else graph
        assert name is not None
        with _runtime(database_url) as rt:
            if graph is not None and not rt.is_graph(graph):
                rt.known(graph)  # unknown: says what is registered
                raise BadInput(f"{graph!r} is an agent: use --agent {graph}")
            status = rt.start(name, data, goal=goal, thread_id=thread_id, key=key)
        _emit(as_json, status.to_dict(), lambda: _render_status(status))

    _guard(body)


@app.command()
def resume(
    thread_id: ThreadArg,
    value: Annotated[str, typer.Option("--value", help="The interrupt's answer, as JSON.")],
    interrupt_id: Annotated[
        str | None, typer.Option("--interrupt-id", help="Which interrupt, when several wait.")
    ] = None,
    by: ByOpt = None,
    run_now: Annotated[bool, typer.Option("--run", help="Continue the run here.")] = False,
    as_json: JsonOpt = False,
    database_url: DbOpt = None,
) -> None:
    """Answer a graph's pending interrupt() with a value; the run goes on with it (here
    with --run, or in the next `waystone run` or idle worker)."""

    def body() -> None:
        answer = _parse_json(value, "--value")
        with _runtime(database_url) as rt:
            result = rt.resume(thread_id, answer, interrupt_id=interrupt_id, by=_actor(by))
            if run_now:
                result = rt.run(thread_id)
        _emit(as_json, result.to_dict(), lambda: _render_status(result))
        if run_now:
            _settled(result)

    _guard(body)


@app.command()
def run(thread_id: ThreadArg, as_json: JsonOpt = False, database_url: DbOpt = None) -> None:
    """Drive a run in this process until it waits or ends."""

    def body() -> None:
        with _runtime(database_url) as rt:
            status = rt.run(thread_id)
            shown = rt.revealed(status)
        _emit(as_json, status.to_dict(), lambda: _render_status(shown))
        _settled(status)

    _guard(body)


@app.command()
def status(thread_id: ThreadArg, as_json: JsonOpt = False, database_url: DbOpt = None) -> None:
    """Show a run's state, next step and pending approval."""

    def body() -> None:
        with _runtime(database_url) as rt:
            result = rt.status(thread_id)
            shown = rt.revealed(result)
        _emit(as_json, result.to_dict(), lambda: _render_status(shown))

    _guard(body)


@app.command("list")
def list_runs(
    state: Annotated[str | None, typer.Option("--state", help="Only runs in this state.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1)] = 100,
    as_json: JsonOpt = False,
    database_url: DbOpt = None,
) -> None:
    """List runs, newest first."""
    from waystone.runs.states import STATES

    def body() -> None:
        if state is not None and state not in STATES:
            raise BadInput(f"--state must be one of {', '.join(STATES)}")
        with _runtime(database_url) as rt:
            runs = rt.list(state, limit)

        def render() -> None:
            table = Table("thread id", "agent", "state", "updated", "reason")
            for r in runs:
                table.add_row(r.thread_id, r.agent, r.state, r.updated_at[:19], r.reason)
            out.print(table)

        _emit(as_json, {"runs": [r.to_dict() for r in runs]}, render)

    _guard(body)


@app.command()
def history(thread_id: ThreadArg, as_json: JsonOpt = False, database_url: DbOpt = None) -> None:
    """The run's events, node checkpoints and effects, in order."""

    def body() -> None:
        with _runtime(database_url) as rt:
            result = rt.history(thread_id)
        _emit(as_json, result, lambda: _render_history(result))

    _guard(body)


@app.command()
def approve(
    thread_id: ThreadArg,
    by: ByOpt = None,
    comment: Annotated[str | None, typer.Option("--comment")] = None,
    args: Annotated[str | None, typer.Option("--args", help="Edited arguments (JSON).")] = None,
    run_now: Annotated[bool, typer.Option("--run", help="Continue the run here.")] = False,
    as_json: JsonOpt = False,
    database_url: DbOpt = None,
) -> None:
    """Approve the action a run waits on (or approve edited arguments with --args)."""

    def body() -> None:
        edited = edited_args(_parse_json(args, "--args"), "--args") if args is not None else None
        with _runtime(database_url) as rt:
            result = rt.approve(thread_id, by=_actor(by), comment=comment, args=edited)
            if run_now:
                result = rt.run(thread_id)
        _emit(as_json, result.to_dict(), lambda: _render_status(result))
        if run_now:
            _settled(result)

    _guard(body)


@app.command()
def reject(
    thread_id: ThreadArg,
    reason: Annotated[str, typer.Option("--reason", help="Why (required).")],
    by: ByOpt = None,
    as_json: JsonOpt = False,
    database_url: DbOpt = None,
) -> None:
    """Reject the action a run waits on; the run ends failed with the reason, at once."""

    def body() -> None:
        with _runtime(database_url) as rt:
            result = rt.reject(thread_id, by=_actor(by), reason=reason)
        _emit(as_json, result.to_dict(), lambda: _render_status(result))

    _guard(body)


@app.command()
def requeue(
    thread_id: ThreadArg,
    reason: Annotated[str, typer.Option("--reason", help="What was checked or fixed.")],
    by: ByOpt = None,
    as_json: JsonOpt = False,
    database_url: DbOpt = None,
) -> None:
    """Put a failed or needs-human run back in the queue, once a person has looked."""

    def body() -> None:
        with _runtime(database_url) as rt:
            result = rt.requeue(thread_id, by=_actor(by), reason=reason)
        _emit(as_json, result.to_dict(), lambda: _render_status(result))

    _guard(body)


@app.command()
def fork(
    thread_id: ThreadArg,
    at: Annotated[str | None, typer.Option("--at", help="Checkpoint id (default: latest).")] = None,
    new_thread_id: Annotated[str | None, typer.Option("--thread-id", help="The fork's id.")] = None,
    by: ByOpt = None,
    as_json: JsonOpt = False,
    database_url: DbOpt = None,
) -> None:
    """Fork a run into a new queued thread; effects the original applied are reused, never
    applied again."""

    def body() -> None:
        with _runtime(database_url) as rt:
            result = rt.fork(thread_id, at=at, new_thread_id=new_thread_id, by=_actor(by))
        _emit(as_json, result.to_dict(), lambda: _render_status(result))

    _guard(body)


@app.command()
def erase(
    subject: Annotated[str, typer.Option("--subject", help="The value to erase, e.g. an email.")],
    as_json: JsonOpt = False,
    database_url: DbOpt = None,
) -> None:
    """Erase a person's value from the vault: the history keeps its token, the value is gone
    and can no longer be revealed."""

    def body() -> None:
        with _runtime(database_url) as rt:
            tokens = rt.vault.erase(subject)
        _emit(
            as_json,
            {"erased": tokens},
            lambda: out.print(f"erased {len(tokens)} value(s): {', '.join(tokens) or '-'}"),
        )

    _guard(body)


@app.command()
def cancel(
    thread_id: ThreadArg,
    reason: Annotated[str, typer.Option("--reason", help="Why (required).")],
    by: ByOpt = None,
    as_json: JsonOpt = False,
    database_url: DbOpt = None,
) -> None:
    """Cancel a run: it ends failed, reason cancelled; a worker holding it stops at its
    next step boundary."""

    def body() -> None:
        with _runtime(database_url) as rt:
            result = rt.cancel(thread_id, by=_actor(by), reason=reason)
        _emit(as_json, result.to_dict(), lambda: _render_status(result))

    _guard(body)


@app.command("signal")
def send_signal(
    thread_id: ThreadArg,
    name: Annotated[str, typer.Argument(help="The signal's name, e.g. refund.settled.")],
    payload: Annotated[str | None, typer.Option("--payload", help="A JSON object.")] = None,
    key: Annotated[
        str | None, typer.Option("--key", help="Deliver once per key (a webhook event id).")
    ] = None,
    by: ByOpt = None,
    as_json: JsonOpt = False,
    database_url: DbOpt = None,
) -> None:
    """Deliver an external event to a run; a run waiting for it wakes up."""

    def body() -> None:
        data = _parse_json(payload, "--payload") if payload is not None else {}
        if not isinstance(data, dict):
            raise BadInput("--payload must be a JSON object")
        with _runtime(database_url) as rt:
            result = rt.signal(thread_id, name, data, key=key, actor=_actor(by))
        _emit(as_json, result.to_dict(), lambda: _render_status(result))

    _guard(body)


def main() -> None:
    app()


from waystone.cli import db, ops  # noqa: E402,F401 - their commands register on `app`

if __name__ == "__main__":
    main()
