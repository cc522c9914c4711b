"""Checkpoints load as LangGraph's own serializer loads them. In its strict mode
(``LANGGRAPH_STRICT_MSGPACK``), a blob that names a class (written by anyone who can write
to the database) is read back as that class's fields, and the class is never imported or
called; without it, the class is made, as with the stock saver."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import psycopg
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.serde import _msgpack

from tests.support.inside import parts
from waystone import Runtime, Settings


@dataclass
class Planted:
    """Stands in for a dangerous callable: it records every time it is constructed."""

    made: ClassVar[list[int]] = []
    x: int
    tag: str = field(default="planted")

    def __post_init__(self) -> None:
        Planted.made.append(self.x)


def _plant(database_url: str) -> Any:
    config: Any = {"configurable": {"thread_id": "planted", "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"input": Planted(7)}
    checkpoint["channel_versions"] = {"input": 1}
    with psycopg.connect(database_url, autocommit=True, prepare_threshold=0) as conn:
        PostgresSaver(conn).put(config, checkpoint, {"source": "input", "step": -1}, {"input": 1})
    Planted.made.clear()
    return config


def test_in_strict_mode_a_blob_naming_a_class_loads_as_plain_data(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _plant(database_url)
    monkeypatch.setattr(_msgpack, "STRICT_MSGPACK_ENABLED", True)  # as the variable sets it
    with Runtime(Settings(database_url=database_url)) as rt:
        found = parts(rt).saver.get_tuple(config)
    assert found is not None
    assert found.checkpoint["channel_values"]["input"] == {"x": 7, "tag": "planted"}
    assert Planted.made == []  # never constructed on the way out


def test_by_default_a_blob_loads_as_the_stock_saver_loads_it(
    runtime: Runtime, database_url: str
) -> None:
    config = _plant(database_url)
    found = parts(runtime).saver.get_tuple(config)
    with psycopg.connect(database_url, autocommit=True, prepare_threshold=0) as conn:
        stock = PostgresSaver(conn).get_tuple(config)
    assert found is not None and stock is not None
    assert found.checkpoint["channel_values"]["input"] == Planted(7)
    assert stock.checkpoint["channel_values"]["input"] == Planted(7)
