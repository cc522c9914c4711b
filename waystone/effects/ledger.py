"""The effect ledger: the one class that reads and writes ``waystone.effects``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from waystone.checkpointing.database import Database


@dataclass(frozen=True)
class Effect:
    key: str
    thread_id: str
    ordinal: int
    tool: str
    args: dict[str, Any]
    status: str
    attempts: int
    receipt: dict[str, Any] | None
    confirmation: dict[str, Any] | None
    error: str | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Effect:
        return cls(**{k: row[k] for k in cls.__dataclass_fields__})


class Ledger:
    """``redact`` runs over arguments, receipts, confirmations and errors before writing."""

    def __init__(
        self,
        db: Database,
        redact: Callable[[Any], Any] = lambda v: v,
        reveal: Callable[[Any], Any] = lambda v: v,
    ) -> None:
        self.db = db
        self.redact = redact
        self.reveal = reveal

    def _effect(self, row: dict[str, Any]) -> Effect:
        opened = {**row}
        for name in ("args", "receipt", "confirmation", "error"):
            opened[name] = self.reveal(row.get(name))
        return Effect.from_row(opened)

    def get(self, key: str) -> Effect | None:
        row = self.db.fetch_one("get_effect", key=key)
        return self._effect(row) if row else None

    def for_thread(self, thread_id: str) -> list[Effect]:
        return [self._effect(r) for r in self.db.fetch_all("list_effects", thread_id=thread_id)]

    def age_seconds(self, key: str) -> float:
        """How long ago the effect's row last changed, by the database's clock."""
        row = self.db.fetch_one("effect_age", key=key)
        return float(row["age"]) if row else 0.0

    def record_intent(
        self,
        *,
        key: str,
        thread_id: str,
        ordinal: int,
        tool: str,
        args: dict[str, Any],
        fence: int | None = None,
    ) -> Effect:
        """Commit the intent (or count one more attempt) before calling the provider."""
        row = self.db.fetch_one(
            "record_intent",
            fence=fence,
            key=key,
            thread_id=thread_id,
            ordinal=ordinal,
            tool=tool,
            args=self.redact(args),
        )
        assert row is not None
        return self._effect(row)

    def update(
        self,
        key: str,
        status: str,
        *,
        receipt: dict[str, Any] | None = None,
        confirmation: dict[str, Any] | None = None,
        error: str | None = None,
        fence: int | None = None,
    ) -> Effect:
        row = self.db.fetch_one(
            "update_effect",
            fence=fence,
            key=key,
            status=status,
            receipt=self.redact(receipt),
            confirmation=self.redact(confirmation),
            error=self.redact(error),
        )
        if row is None:
            raise KeyError(f"no effect with key {key!r} in the ledger")
        return self._effect(row)
