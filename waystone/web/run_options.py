"""A run request's options besides its input, as the reference takes them: ``metadata``,
``config`` (its ``configurable`` and ``recursion_limit``), ``context`` and breakpoints
(``interrupt_before`` / ``interrupt_after``), made into the :class:`RunOptions` the run is
kept with (what a worker applies when it drives it)."""

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


def given(body: RunCreate) -> list[str]:
    """The options a request carries (an empty one counts as none, as the reference's)."""
    return [k for k in OPTIONS if getattr(body, k) not in (None, {}, [])]


def from_body(body: RunCreate) -> RunOptions | None:
    """The request's options; ``None`` when it has none. :class:`BadInput` for values
    that do not go together; a config key Waystone does not apply is :class:`Unsupported`."""
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
    )


class Unsupported(Exception):
    """Something Waystone does not do: the API answers 422."""
