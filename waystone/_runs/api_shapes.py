"""What the LangGraph server API calls Waystone's runs and threads (their statuses, a
graph's assistant id), and values as its JSON holds them: shared by the web edge and the
webhooks a run's end sends."""

from __future__ import annotations

import base64
import dataclasses
import uuid
from datetime import datetime
from typing import Any

# The reference server's: a graph's default assistant is uuid5(this, graph id).
NAMESPACE_GRAPH = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")

# A run's state -> the API's run status; a waiting run stopped on an interrupt.
RUN_STATUS = {
    "queued": "pending",
    "running": "running",
    "waiting": "interrupted",
    "done": "success",
    "failed": "error",
    "needs-human": "error",
}
# A thread's current run's state -> the API's thread status.
THREAD_STATUS = {
    None: "idle",
    "queued": "busy",
    "running": "busy",
    "waiting": "interrupted",
    "done": "idle",
    "failed": "error",
    "needs-human": "error",
}


def assistant_id(graph_id: str) -> str:
    return str(uuid.uuid5(NAMESPACE_GRAPH, graph_id))


def jsonable(value: Any) -> Any:
    """``value`` as JSON can hold it: a message or any pydantic model as its fields (as
    the reference server gives them), a dataclass as its fields."""
    from pydantic import BaseModel

    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, BaseModel):
        return jsonable(value.model_dump(mode="json"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return str(value)
