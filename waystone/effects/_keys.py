"""Deterministic identities for actions: idempotency keys and action digests.

A key is a pure function of ``(thread_id, ordinal, tool, canonical args)`` for the agent
preset's actions, and of ``(key namespace, task, call, tool, canonical args)`` for an
effect made inside a node of any graph: the same action of the same run always gets the
same key, in any process, so a retry after a crash is recognised by the provider and by
the ledger. Never a random id per attempt, never a clock.
"""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal
from typing import Any


def _default(value: object) -> object:
    if isinstance(value, Decimal):
        return str(value)
    raise TypeError(f"cannot canonicalise {type(value).__name__}")


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: equal values give equal text."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_default
    )


def action_digest(tool: str, args: dict[str, Any]) -> str:
    """What a person approves: the tool and its exact arguments."""
    text = canonical_json({"tool": tool, "args": args})
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:32]


def idempotency_key(thread_id: str, ordinal: int, tool: str, args: dict[str, Any]) -> str:
    """The key an effect carries to the provider and in the ledger."""
    text = canonical_json([thread_id, ordinal, tool, args])
    return f"ws-{tool}-{hashlib.sha256(text.encode()).hexdigest()[:40]}"


def effect_key(namespace: str, task: str, call: str, tool: str, args: dict[str, Any]) -> str:
    """The key of an effect made inside a node of any graph: ``namespace`` is the thread
    keys derive from (a fork's root), ``task`` the task's identity (its checkpoint
    namespace), ``call`` which call of the task it is (a tool call's id, or the count of
    identical calls before it). Equal inputs give the same key in any process."""
    text = canonical_json(["effect", namespace, task, call, tool, args])
    return f"ws-{tool}-{hashlib.sha256(text.encode()).hexdigest()[:40]}"
