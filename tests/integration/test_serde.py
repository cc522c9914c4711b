"""A checkpoint loads only plain data: a blob that names a class (written by anyone who
can write to the database) is read back as that class's fields, and the class is never
imported or called. Waystone's state is plain data, so nothing of its own is lost."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import psycopg
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.postgres import PostgresSaver

from tests.support.inside import parts
from waystone import Runtime


@dataclass
class Planted:
    """Stands in for a dangerous callable: it records every time it is constructed."""

    made: ClassVar[list[int]] = []
    x: int
    tag: str = field(default="planted")

    def __post_init__(self) -> None:
        Planted.made.append(self.x)


def test_a_blob_naming_a_class_loads_as_plain_data(runtime: Runtime, database_url: str) -> None:
    config: Any = {"configurable": {"thread_id": "planted", "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"input": Planted(7)}
    checkpoint["channel_versions"] = {"input": 1}
    with psycopg.connect(database_url, autocommit=True, prepare_threshold=0) as conn:
        PostgresSaver(conn).put(config, checkpoint, {"source": "input", "step": -1}, {"input": 1})
    Planted.made.clear()

    found = parts(runtime).saver.get_tuple(config)
    assert found is not None
    assert found.checkpoint["channel_values"]["input"] == {"x": 7, "tag": "planted"}
    assert Planted.made == []  # never constructed on the way out
