"""A run's messages as its page shows them: each message's text, the tool calls an AI
message makes (name, arguments as stored, id) and what a tool message answers (its call's
id, the tool, its status). Values are taken as the checkpoint holds them (personal data as
tokens); the template escapes every one."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def shown_messages(found: object) -> list[dict[str, Any]]:
    """The rows of a ``messages`` channel's value (anything else: none)."""
    if not isinstance(found, list):
        return []
    return [shown_message(m) for m in found]


def shown_message(message: object) -> dict[str, Any]:
    """One message, a langchain-core message or its dict form."""
    content = _field(message, "content", message)
    shown: dict[str, Any] = {
        "type": str(_field(message, "type", None) or "message"),
        "text": content if isinstance(content, str) else _json(content),
        "tool_calls": [_call(c) for c in _field(message, "tool_calls", None) or []],
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
        "args": _json(_field(call, "args", {})),
        "id": _text(_field(call, "id", None)),
    }


def _field(item: object, name: str, default: Any) -> Any:
    if isinstance(item, Mapping):
        return item.get(name, default)
    return getattr(item, name, default)


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _json(value: object) -> str:
    return json.dumps(value, default=str, sort_keys=True, ensure_ascii=False)
