"""A rollback's part in a thread's checkpoints: what state it goes back to, how it goes
back (a new newest checkpoint holding it, so nothing is deleted: history is evidence),
and the thread's history as its readers see it afterwards (every branch but the
rolled-back runs')."""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING

from psycopg.types.json import Jsonb

from waystone._db.database import FENCE_SQL
from waystone._runtime.driver import RUN_KEY

if TYPE_CHECKING:
    from collections.abc import Iterable

    from langgraph.types import StateSnapshot

    from waystone._checkpointing.saver import WaystoneSaver
    from waystone._db.database import Conn, Database

RESTORED = "waystone_restored"  # the metadata key of a checkpoint a rollback wrote


def checkpoint_after(newest: str | None) -> str:
    """A checkpoint id that sorts after ``newest`` (LangGraph's newest is the greatest):
    a time-ordered one, or ``newest`` plus one when this clock is behind its writer's."""
    from langgraph.checkpoint.base.id import uuid6

    made = str(uuid6())
    if newest is None or made > newest:
        return made
    return str(uuid.UUID(int=uuid.UUID(newest).int + 1))


def branches(history: Iterable[StateSnapshot], rolled_back: set[str]) -> list[StateSnapshot]:
    """The thread's history (newest first) as the reference lists it, every branch a run
    from a checkpoint left included: without the checkpoints of the runs rolled back
    (``rolled_back``: their ids; the reference deletes them), nor those a rollback wrote."""
    return [
        snap
        for snap in history
        if RESTORED not in (snap.metadata or {})
        and (snap.metadata or {}).get(RUN_KEY) not in rolled_back
    ]


def before(saver: WaystoneSaver, thread_id: str, run_id: str) -> str | None:
    """The checkpoint the thread had before run ``run_id`` wrote any (its newest when
    the run wrote none), ``None`` when there was none: the state a rollback restores."""
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    found = list(saver.list(config))  # type: ignore[arg-type]
    by_id = {t.config["configurable"]["checkpoint_id"]: t for t in found}
    at = found[0] if found else None
    while at is not None and (at.metadata or {}).get(RUN_KEY) == run_id:
        parent = at.parent_config
        at = by_id.get(parent["configurable"]["checkpoint_id"]) if parent else None
    return at.config["configurable"]["checkpoint_id"] if at is not None else None


def restore(db: Database, conn: Conn, thread_id: str, at: str | None) -> None:
    """A new newest checkpoint holding the state at ``at`` (an empty state for
    ``None``), written under the lease token of the run just begun. The rolled-back
    runs' checkpoints stay (history is evidence), off the new newest one's lineage."""
    from langgraph.checkpoint.base import empty_checkpoint

    token = db.execute("lock_thread_run", conn=conn, thread_id=thread_id)[0]["lease_token"]
    conn.execute(FENCE_SQL, {"lease_token": str(token)})
    newest = db.execute("newest_checkpoint_id", conn=conn, thread_id=thread_id)[0]["newest"]
    new_id = checkpoint_after(newest)
    if at is not None:
        db.execute("copy_checkpoint_as_latest", conn, thread_id=thread_id, at=at, new_id=new_id)
        return
    empty = {**empty_checkpoint(), "id": new_id}
    db.execute(
        "insert_empty_checkpoint",
        conn=conn,
        thread_id=thread_id,
        new_id=new_id,
        checkpoint=Jsonb(json.loads(json.dumps(empty, default=str))),
        metadata=Jsonb({"source": "update", "step": -1, "parents": {}, RESTORED: None}),
    )
