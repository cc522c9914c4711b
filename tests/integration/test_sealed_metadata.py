"""Metadata filters work under encryption at rest: every metadata key but the structural
ones is sealed in Postgres, where no filter can match it, so the saver matches those keys
once it has opened them (as JSONB containment would), and still honours the limit."""

from __future__ import annotations

from typing import Any

import psycopg
from langgraph.checkpoint.base import empty_checkpoint

from waystone import Runtime
from waystone.checkpointing.saver import make_saver
from waystone.privacy.keys import parse_key
from waystone.privacy.seal import Sealer


def test_filters_match_sealed_metadata(runtime: Runtime, sql: psycopg.Connection[Any]) -> None:
    saver = make_saver(runtime.db, sealer=Sealer(parse_key("5e" * 32)))
    thread = "sealed-filters"
    parent: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    for step, owner in enumerate(["ana", "bo", "ana", "bo", "ana"]):
        meta: Any = {"source": "loop", "step": step, "parents": {}, "owner": owner}
        meta["tags"] = ["x", owner]
        parent = saver.put(parent, empty_checkpoint(), meta, {})

    stored = sql.execute(
        "SELECT metadata->>'owner', metadata->>'step' FROM checkpoints WHERE thread_id = %s",
        (thread,),
    ).fetchall()
    assert len(stored) == 5
    assert all(owner not in ("ana", "bo") for owner, _ in stored)  # sealed
    assert sorted(int(step) for _, step in stored) == [0, 1, 2, 3, 4]  # structural: readable

    config: Any = {"configurable": {"thread_id": thread}}

    def steps(**how: Any) -> list[int]:
        return [c.metadata["step"] for c in saver.list(config, **how)]

    assert steps(filter={"owner": "ana"}) == [4, 2, 0]
    assert steps(filter={"owner": "bo", "source": "loop"}) == [3, 1]
    assert steps(filter={"owner": "ana", "step": 2}) == [2]
    assert steps(filter={"owner": "ana"}, limit=2) == [4, 2]
    assert steps(filter={"tags": ["bo"]}) == [3, 1]  # arrays: by their elements
    assert steps(filter={"owner": "nobody"}) == []
    assert steps(limit=3) == [4, 3, 2]
