"""The ``waystone`` commands that messages tell a person to run, quoted so that each runs
as printed (``tests/unit/test_hints.py`` parses every one with the CLI's own parser)."""

from __future__ import annotations

import shlex


def command(*args: str) -> str:
    """``waystone ARGS`` in backticks, each argument quoted for a shell where it needs it."""
    return f"`waystone {shlex.join(args)}`"


def requeue_command(thread_id: str) -> str:
    return command("requeue", thread_id, "--reason", "what was checked or fixed")


def decide_commands(thread_id: str) -> str:
    return f"{command('approve', thread_id)} or {command('reject', thread_id, '--reason', 'why')}"


def settle_commands(thread_id: str, key: str) -> str:
    """What a person runs once they have checked the provider for the open effect ``key``:
    record it made or not made, then requeue the run."""
    why = "what the provider shows"
    made = command("settle", thread_id, key, "--applied", "--reason", why)
    absent = command("settle", thread_id, key, "--absent", "--reason", why)
    return f"{made} if it was made, {absent} if not, then {requeue_command(thread_id)}"
