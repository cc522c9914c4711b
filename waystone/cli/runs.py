"""The commands on runs: start, resume, run, status, list, history, approve, reject,
requeue, settle, fork, erase, cancel, signal."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from waystone._hints import requeue_command
from waystone.cli.app import (
    ByOpt,
    DbOpt,
    JsonOpt,
    ThreadArg,
    actor,
    app,
    emit,
    guard,
    open_runtime,
    out,
    parse_json,
)
from waystone.cli.render import render_history, render_status, settled
from waystone.errors import BadInput
from waystone.preset._approval import edited_args


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
        data = parse_json(input, "--input")
        name = agent if agent is not None else graph
        assert name is not None
        with open_runtime(database_url) as rt:
            if graph is not None and not rt.is_graph(graph):
                rt.known(graph)  # unknown: says what is registered
                raise BadInput(f"{graph!r} is an agent: use --agent {graph}")
            status = rt.start(name, data, goal=goal, thread_id=thread_id, key=key)
        emit(as_json, status.to_dict(), lambda: render_status(status))

    guard(body)


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
        answer = parse_json(value, "--value")
        with open_runtime(database_url) as rt:
            result = rt.resume(thread_id, answer, interrupt_id=interrupt_id, by=actor(by))
            if run_now:
                result = rt.run(thread_id)
        emit(as_json, result.to_dict(), lambda: render_status(result))
        if run_now:
            settled(result)

    guard(body)


@app.command()
def run(thread_id: ThreadArg, as_json: JsonOpt = False, database_url: DbOpt = None) -> None:
    """Drive a run in this process until it waits or ends."""

    def body() -> None:
        with open_runtime(database_url) as rt:
            status = rt.run(thread_id)
            shown = rt.revealed(status)
        emit(as_json, status.to_dict(), lambda: render_status(shown))
        settled(status)

    guard(body)


@app.command()
def status(thread_id: ThreadArg, as_json: JsonOpt = False, database_url: DbOpt = None) -> None:
    """Show a run's state, next step and pending approval or interrupts."""

    def body() -> None:
        with open_runtime(database_url) as rt:
            result = rt.status(thread_id)
            shown = rt.revealed(result)
        emit(as_json, result.to_dict(), lambda: render_status(shown))

    guard(body)


@app.command("list")
def list_runs(
    state: Annotated[str | None, typer.Option("--state", help="Only runs in this state.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1)] = 100,
    as_json: JsonOpt = False,
    database_url: DbOpt = None,
) -> None:
    """List runs, newest first."""
    from waystone._runs.states import STATES

    def body() -> None:
        if state is not None and state not in STATES:
            raise BadInput(f"--state must be one of {', '.join(STATES)}")
        with open_runtime(database_url) as rt:
            runs = rt.list(state, limit)

        def render() -> None:
            table = Table("thread id", "agent", "state", "updated", "reason")
            for r in runs:
                table.add_row(r.thread_id, r.agent, r.state, r.updated_at[:19], r.reason)
            out.print(table)

        emit(as_json, {"runs": [r.to_dict() for r in runs]}, render)

    guard(body)


@app.command()
def history(thread_id: ThreadArg, as_json: JsonOpt = False, database_url: DbOpt = None) -> None:
    """The thread's runs, events, node checkpoints and effects, in order."""

    def body() -> None:
        with open_runtime(database_url) as rt:
            result = rt.history(thread_id)
        emit(as_json, result, lambda: render_history(result))

    guard(body)


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
        edited = edited_args(parse_json(args, "--args"), "--args") if args is not None else None
        with open_runtime(database_url) as rt:
            result = rt.approve(thread_id, by=actor(by), comment=comment, args=edited)
            if run_now:
                result = rt.run(thread_id)
        emit(as_json, result.to_dict(), lambda: render_status(result))
        if run_now:
            settled(result)

    guard(body)


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
        with open_runtime(database_url) as rt:
            result = rt.reject(thread_id, by=actor(by), reason=reason)
        emit(as_json, result.to_dict(), lambda: render_status(result))

    guard(body)


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
        with open_runtime(database_url) as rt:
            result = rt.requeue(thread_id, by=actor(by), reason=reason)
        emit(as_json, result.to_dict(), lambda: render_status(result))

    guard(body)


@app.command()
def settle(
    thread_id: ThreadArg,
    key: Annotated[str, typer.Argument(help="The effect's key (status and history show it).")],
    reason: Annotated[str, typer.Option("--reason", help="What the provider shows.")],
    applied: Annotated[
        bool, typer.Option("--applied", help="The provider shows the call made.")
    ] = False,
    absent: Annotated[
        bool, typer.Option("--absent", help="The provider shows no such call.")
    ] = False,
    receipt: Annotated[
        str | None,
        typer.Option("--receipt", help="With --applied: what the provider shows, as JSON."),
    ] = None,
    by: ByOpt = None,
    as_json: JsonOpt = False,
    database_url: DbOpt = None,
) -> None:
    """Record what you found at the provider for an open call of a failed or needs-human
    run: --applied (not made again) or --absent (made again under its key); then requeue."""

    def body() -> None:
        if applied == absent:
            raise BadInput("settle needs one of --applied (it was made) or --absent (it was not)")
        given = parse_json(receipt, "--receipt") if receipt is not None else None
        with open_runtime(database_url) as rt:
            result = rt.settle(
                thread_id, key, applied=applied, receipt=given, by=actor(by), reason=reason
            )

        def render() -> None:
            render_status(result)
            out.print(f"recorded; next: {requeue_command(thread_id)}")

        emit(as_json, result.to_dict(), render)

    guard(body)


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
        with open_runtime(database_url) as rt:
            result = rt.fork(thread_id, at=at, new_thread_id=new_thread_id, by=actor(by))
        emit(as_json, result.to_dict(), lambda: render_status(result))

    guard(body)


@app.command()
def erase(
    subject: Annotated[str, typer.Option("--subject", help="The value to erase, e.g. an email.")],
    as_json: JsonOpt = False,
    database_url: DbOpt = None,
) -> None:
    """Erase a person's value from the vault: the history keeps its token, the value is gone
    and can no longer be revealed."""

    def body() -> None:
        with open_runtime(database_url) as rt:
            tokens = rt.erase(subject)
        emit(
            as_json,
            {"erased": tokens},
            lambda: out.print(f"erased {len(tokens)} value(s): {', '.join(tokens) or '-'}"),
        )

    guard(body)


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
        with open_runtime(database_url) as rt:
            result = rt.cancel(thread_id, by=actor(by), reason=reason)
        emit(as_json, result.to_dict(), lambda: render_status(result))

    guard(body)


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
        data = parse_json(payload, "--payload") if payload is not None else {}
        if not isinstance(data, dict):
            raise BadInput("--payload must be a JSON object")
        with open_runtime(database_url) as rt:
            result = rt.signal(thread_id, name, data, key=key, actor=actor(by))
        emit(as_json, result.to_dict(), lambda: render_status(result))

    guard(body)
