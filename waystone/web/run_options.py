"""A run request's options besides its input, as the reference takes them: ``metadata``,
``config`` (its ``configurable`` and ``recursion_limit``), ``context``, breakpoints
(``interrupt_before`` / ``interrupt_after``) and the checkpoint it begins from
(``checkpoint`` / ``checkpoint_id``), made into the :class:`RunOptions` the run is kept
with (what a worker applies when it drives it). ``durability`` is checked here too:
Waystone's is always ``"sync"``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from waystone._runtime.options import RunOptions
from waystone.errors import BadInput

if TYPE_CHECKING:
    from waystone.web.bodies import RunCreate

OPTIONS = ("metadata", "config", "context", "interrupt_before", "interrupt_after")
CONFIG_KEYS = ("configurable", "recursion_limit")
# The configurable keys a server sets for the caller its auth found: a request's are refused.
SERVERS = ("langgraph_auth_user", "langgraph_auth_user_id", "langgraph_auth_permissions")


FORK_KEYS = ("checkpoint_id", "checkpoint_ns", "checkpoint_map", "thread_id")


def given(body: RunCreate) -> list[str]:
    """The options a request carries (an empty one counts as none, as the reference's)."""
    named = [k for k in OPTIONS if getattr(body, k) not in (None, {}, [])]
    return named + (["checkpoint"] if checkpoint_of(body) is not None else [])


def check_durability(body: RunCreate) -> None:
    """:class:`Unsupported` for a durability weaker than a committed checkpoint per step
    (the reference maps ``checkpoint_during: false`` to ``"exit"``)."""
    weaker = body.durability not in (None, "sync") or body.checkpoint_during is False
    if weaker:
        asked = body.durability or "exit (checkpoint_during: false)"
        raise Unsupported(
            f"durability {asked} is not supported: Waystone commits a checkpoint at every "
            'step, so that a run resumes after a crash where it was; send "sync" or leave '
            "it out"
        )


def checkpoint_of(body: RunCreate) -> str | None:
    """The id of the checkpoint the run begins from (``checkpoint`` wins over
    ``checkpoint_id``, as the reference merges them), or ``None``."""
    fork = body.checkpoint or {}
    unknown = sorted(set(fork) - set(FORK_KEYS))
    if unknown:
        raise BadInput(f"checkpoint has no {', '.join(unknown)} (it takes {', '.join(FORK_KEYS)})")
    mapped = fork.get("checkpoint_map") or {}
    if not isinstance(mapped, dict):
        raise BadInput("checkpoint.checkpoint_map must be an object")
    if fork.get("checkpoint_ns") not in (None, "") or set(mapped) - {""}:
        raise Unsupported(
            "a run begins from a checkpoint of the graph itself, not of a subgraph: leave "
            "checkpoint_ns and checkpoint_map out"
        )
    found = fork.get("checkpoint_id") or body.checkpoint_id
    if found is not None and not isinstance(found, str):
        raise BadInput("checkpoint.checkpoint_id must be a string")
    return found or None


def from_body(body: RunCreate) -> RunOptions | None:
    """The request's options; ``None`` when it has none. :class:`BadInput` for values
    that do not go together; a config key Waystone does not apply is :class:`Unsupported`."""
    check_durability(body)
    if not given(body):
        return None
    config = body.config or {}
    other = sorted(set(config) - set(CONFIG_KEYS))
    if other:
        raise Unsupported(
            f"Waystone applies config's {' and '.join(CONFIG_KEYS)} only, not "
            f"{', '.join(other)}: leave it out"
        )
    server_keys = sorted(set(config.get("configurable") or {}) & set(SERVERS))
    if server_keys:
        raise Unsupported(
            f"configurable {', '.join(server_keys)} is the server's (who called, from its "
            "auth): leave it out"
        )
    if config.get("configurable") and body.context:
        raise BadInput(  # the reference's word
            "Cannot specify both configurable and context. Prefer setting context alone."
        )
    return RunOptions(
        metadata=body.metadata or {},
        configurable=config.get("configurable") or {},
        recursion_limit=config.get("recursion_limit"),
        context=body.context or None,
        interrupt_before=body.interrupt_before or None,
        interrupt_after=body.interrupt_after or None,
        checkpoint_id=checkpoint_of(body),
    )


class Unsupported(Exception):
    """Something Waystone does not do: the API answers 422."""
