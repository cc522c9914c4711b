"""What a webhook sends: the run as the LangGraph server API shows it, with the keys the
reference server adds (``status``, ``run_started_at``, ``run_ended_at``,
``webhook_sent_at``, ``values``, and ``error`` for a run that failed)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any

from waystone._runs.api_shapes import RUN_STATUS, assistant_id, jsonable
from waystone._runs.registry import run_id_of

if TYPE_CHECKING:
    from waystone._webhooks.store import Claimed
    from waystone.runtime import Runtime

_KEYS = uuid.UUID("0c5e3d1a-7b4f-4e2a-9d6c-3f8a1b2c4d5e")  # the namespace of delivery keys


def idempotency_key(claimed: Claimed) -> str:
    """The same for every attempt of one delivery, by any worker: derived from the run
    and the webhook it was created with, never random."""
    run_id = run_id_of(claimed.thread_id, claimed.run_number)
    return str(uuid.uuid5(_KEYS, f"{run_id}/{claimed.id}"))


def body_of(rt: Runtime, claimed: Claimed, sent_at: datetime) -> dict[str, Any]:
    status = RUN_STATUS[claimed.run_state]
    run_id = run_id_of(claimed.thread_id, claimed.run_number)
    # a run on a user's assistant keeps its id in its metadata; any other, its graph's
    kept = rt.run_metadata(claimed.thread_id).get(run_id) or {}
    body: dict[str, Any] = {
        "run_id": run_id,
        "thread_id": claimed.thread_id,
        "assistant_id": kept.get("assistant_id") or assistant_id(claimed.agent),
        "created_at": claimed.run_created_at.isoformat(),
        "updated_at": claimed.due_at.isoformat(),
        "metadata": {},
        "kwargs": {},
        "multitask_strategy": "reject",
        "status": status,
        "run_started_at": claimed.run_created_at.isoformat(),
        "run_ended_at": claimed.due_at.isoformat(),
        "webhook_sent_at": sent_at.isoformat(),
        "values": _values(rt, claimed),
    }
    if status == "error":
        body["error"] = {"error": claimed.run_state, "message": claimed.run_reason or ""}
    return body


def _values(rt: Runtime, claimed: Claimed) -> Any:
    """The thread's values at the checkpoint it had when the run stopped (a later run on
    the thread does not change what this one ended with)."""
    if claimed.checkpoint_id is None or claimed.agent not in rt.names():
        return None
    config = rt.config(claimed.thread_id)
    configurable = {**config.get("configurable", {}), "checkpoint_id": claimed.checkpoint_id}
    snapshot = rt.graph(claimed.agent).get_state({**config, "configurable": configurable})
    return jsonable(snapshot.values)
