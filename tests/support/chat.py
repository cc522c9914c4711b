"""A user's chat message as a run's input, and the texts of a chat state's messages."""

from __future__ import annotations

from typing import Any


def say(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def texts(values: dict[str, Any]) -> list[str]:
    return [m["content"] for m in values.get("messages", [])]
