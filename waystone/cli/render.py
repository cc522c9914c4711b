"""How the CLI shows a run's status and history to a person (``--json`` prints them
whole instead)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table

from waystone._hints import command, decide_commands, requeue_command
from waystone.cli.app import fail, out
from waystone.errors import RunStopped

if TYPE_CHECKING:
    from waystone.runtime import RunStatus


def render_status(status: RunStatus) -> None:
    colour = {"done": "green", "failed": "red", "waiting": "yellow", "needs-human": "magenta"}.get(
        status.state, "cyan"
    )
    out.print(f"[bold]{status.thread_id}[/]  [{colour}]{status.state}[/]  ({status.agent})")
    out.print(f"  reason: {status.reason}", highlight=False)
    if status.lease is not None:
        out.print(f"  lease: {lease_line(status.thread_id, status.lease)}", highlight=False)
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
            f"    next: give the answer, as JSON, to waystone resume {status.thread_id} "
            f"--value{which}",
            highlight=False,
        )
    elif status.state in STOPPED:
        out.print(
            f"  next: {command('history', status.thread_id)} says why; "
            f"{requeue_command(status.thread_id)} resumes it",
            highlight=False,
        )


STOPPED = ("failed", "needs-human")


def settled(status: RunStatus) -> None:
    """A run this command drove that ended without reaching its goal exits 7 (the status
    is printed first): a script can tell it from a run that is done or waits."""
    if status.state in STOPPED:
        raise fail(RunStopped(f"run {status.thread_id} ended {status.state}: {status.reason}"))


def lease_line(thread_id: str, lease: dict[str, Any]) -> str:
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


def render_history(history: dict[str, Any]) -> None:
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
