"""What the saver holds for a thread's next save, and how it records a held save."""

from __future__ import annotations

from typing import Any

WriteRow = tuple[str, str, str, str, str, int, str, str, bytes]
Statement = tuple[str, Any, bool]  # (sql, params or rows, executemany)


class Held:
    """What a thread's next save commits with its own, in its transaction and before it:
    held checkpoints (their blobs and rows, as statements), statements that ride with the
    next checkpoint (a node's own ledger changes), and the pending writes of the latest
    checkpoint's task."""

    def __init__(
        self, lease_token: int, rows: list[WriteRow], statements: list[Statement] | None = None
    ) -> None:
        self.lease_token = lease_token
        self.rows = rows
        self.statements = statements or []

    def all(self, insert_writes: str) -> list[Statement]:
        if not self.rows:
            return self.statements
        return [*self.statements, (insert_writes, self.rows, True)]


class Recorder:
    """A cursor that keeps the statements of a held save instead of sending them."""

    def __init__(self) -> None:
        self.statements: list[Statement] = []

    def execute(self, query: str, params: Any = None) -> None:
        self.statements.append((query, params, False))

    def executemany(self, query: str, params_seq: Any) -> None:
        self.statements.append((query, list(params_seq), True))
