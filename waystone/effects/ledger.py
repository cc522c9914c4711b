"""The effect ledger: the one class that reads and writes ``waystone.effects``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from waystone.checkpointing.database import Database


@dataclass(frozen=True)
class Note:
    """An event for the run's history, written in the same transaction as a ledger change."""

    thread_id: str
    kind: str
    reason: str
    evidence: dict[str, Any]


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

    def open_intent(
        self,
        *,
        key: str,
        thread_id: str,
        ordinal: int,
        tool: str,
        args: dict[str, Any],
        fence: int | None = None,
    ) -> tuple[Effect, bool]:
        """The effect for ``key``: a new intent, committed (and ``True``), or the row the
        ledger already holds (and ``False``), which this call leaves as it is."""
        row = self.db.fetch_one(
            "open_intent",
            fence=fence,
            key=key,
            thread_id=thread_id,
            ordinal=ordinal,
            tool=tool,
            args=self.redact(args),
        )
        assert row is not None
        return self._effect(row), bool(row["fresh"])

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
        note: Note | None = None,
    ) -> Effect:
        """Change an effect; with ``note``, its event goes in the same transaction (one
        round trip), so the history says what the ledger says."""
        params: dict[str, Any] = {
            "key": key,
            "status": status,
            "receipt": self.redact(receipt),
            "confirmation": self.redact(confirmation),
            "error": self.redact(error),
        }
        if note is None:
            rows = self.db.fetch_all("update_effect", fence=fence, **params)
        else:
            rows = self.db.fetch_all(
                "update_effect_noted",
                fence=fence,
                **params,
                thread_id=note.thread_id,
                kind=note.kind,
                reason=self.redact(note.reason),
                evidence=self.redact(note.evidence),
                lease_token=fence,
            )
        if not rows:
            raise KeyError(f"no effect with key {key!r} in the ledger")
        return self._effect(rows[0])
