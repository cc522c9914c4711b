"""The LangGraph checkpointer Waystone compiles every graph with."""

from __future__ import annotations

from langgraph.checkpoint.postgres import PostgresSaver

from waystone.checkpointing.database import Database


def make_saver(db: Database) -> PostgresSaver:
    """LangGraph's Postgres saver on Waystone's pool (per-thread checkpoints and writes)."""
    return PostgresSaver(db.pool)
