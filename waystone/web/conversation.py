"""A run's messages as its page shows them: each message's text, the tool calls an AI
message makes (name, arguments as stored, id) and what a tool message answers (its call's
id, the tool, its status). Values are taken as the checkpoint holds them (personal data as
tokens); the template escapes every one."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from waystone.web.render import json_text

logger = logging.getLogger(__name__)


def shown_messages(found: object) -> list[dict[str, Any]]:
    """The rows of a ``messages`` channel's value (anything else: none)."""
    if not isinstance(found, list):
        return []
    return [_shown_or_json(m) for m in found]


def _shown_or_json(message: object) -> dict[str, Any]:
    # A user's own message dicts may hold anything: one the page cannot read is shown as
    # its JSON text rather than failing the page.
    try:
        return shown_message(message)
    except Exception as exc:
        logger.warning("cannot show a message as one: %s", exc)
        return {"type": "message", "text": _fallback_text(message), "tool_calls": []}


def _fallback_text(message: object) -> str:
    try:
        return json_text(message)
    except ValueError:  # a value holding itself
        return repr(message)


def shown_message(message: object) -> dict[str, Any]:
    """One message, a langchain-core message or its dict form (``type`` or ``role``)."""
    content = _field(message, "content", message)
    calls = _field(message, "tool_calls", None)
    kind = _field(message, "type", None) or _field(message, "role", None)
    shown: dict[str, Any] = {
        "type": str(kind or "message"),
        "text": content if isinstance(content, str) else json_text(content),
        "tool_calls": [_call(c) for c in calls] if isinstance(calls, list) else [],
    }
    call_id = _field(message, "tool_call_id", None)
    if call_id is not None:
        shown["result"] = {
            "tool_call_id": str(call_id),
            "name": _text(_field(message, "name", None)),
            "status": _text(_field(message, "status", None)) or "success",
        }
    return shown


def _call(call: object) -> dict[str, str]:
    return {
        "name": _text(_field(call, "name", None)),
        "args": json_text(_field(call, "args", {})),
        "id": _text(_field(call, "id", None)),
    }


def _field(item: object, name: str, default: Any) -> Any:
    if isinstance(item, Mapping):
        return item.get(name, default)
    return getattr(item, name, default)


def _text(value: object) -> str:
    return "" if value is None else str(value)
