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
