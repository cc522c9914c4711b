"""LangGraph's ``PostgresStore`` on Waystone's pool, holding no personal value in plain
form: namespaces, keys, values, filters and queries are redacted (personal data made
tokens, :mod:`waystone._privacy.vault`) on the way in, and each value is sealed whole
(AES-GCM) when ``WAYSTONE_ENCRYPTION_KEY`` is set, then opened on the way out (its
tokens stay tokens, as a run's state shows them).

A sealed value cannot be filtered in SQL: a search with a ``filter`` then reads its
candidates page by page, opens them and filters them here (:func:`matches`). Semantic
search embeds the redacted text of the index fields at write time; only the vectors are
stored, never that text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.postgres import PostgresStore
from langgraph.store.postgres.base import PostgresIndexConfig
from psycopg import Capabilities, Cursor
from psycopg.rows import DictRow, dict_row

from waystone._db.database import pipelined
from waystone._privacy.seal import Sealer, open_value

if TYPE_CHECKING:
    from waystone._db.database import Database

Redact = Callable[[Any], Any]
# candidates read at once by a search filtered after opening (at least the page asked)
SCAN_PAGE = 200


class SealedStore(PostgresStore):
    """``PostgresStore`` whose tables live in the public schema beside LangGraph's
    checkpoint tables (made by its own ``setup()``), reached through ``db``'s pool."""

    def __init__(
        self,
        db: Database,
        redact: Redact,
        sealer: Sealer | None,
        *,
        index: PostgresIndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        super().__init__(conn=db.pool, index=index, ttl=ttl)  # type: ignore[arg-type]
        self.db, self.redact, self.sealer = db, redact, sealer
        self._pipelines = Capabilities().has_pipeline()

    @contextmanager
    def _cursor(self, *, pipeline: bool = False) -> Iterator[Cursor[DictRow]]:
        """A cursor on a connection of Waystone's pool (any kind it has): its errors
        are Waystone's (an unreachable database is ``DatabaseUnavailable``)."""
        with self.db.connection() as conn:
            if pipeline and self._pipelines:
                with pipelined(conn), conn.cursor(binary=True, row_factory=dict_row) as cur:
                    yield cur
            elif pipeline:
                with conn.transaction(), conn.cursor(binary=True, row_factory=dict_row) as cur:
                    yield cur
            else:
                with conn.cursor(binary=True, row_factory=dict_row) as cur:
                    yield cur

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        given = [self._inward(op) for op in ops]
        after = [self._filters_after(op) for op in given]
        in_sql = [op for op, late in zip(given, after, strict=True) if not late]
        done = iter(super().batch(in_sql) if in_sql else [])
        return [
            self._search_opened(op)
            if isinstance(op, SearchOp) and late
            else self._outward(next(done))
            for op, late in zip(given, after, strict=True)
        ]

    def _prepare_batch_PUT_queries(  # noqa: N802 (LangGraph's name)
        self, put_ops: Sequence[tuple[int, PutOp]]
    ) -> tuple[list[tuple[str, Sequence[Any]]], Any]:
        """The rows written sealed; the vectors made from the redacted values."""
        if self.sealer is None:
            return super()._prepare_batch_PUT_queries(put_ops)
        sealer = self.sealer
        rows = [
            (i, op._replace(value=None if op.value is None else sealer.seal(op.value), index=False))
            for i, op in put_ops
        ]
        queries, _ = super()._prepare_batch_PUT_queries(rows)
        kept = [(i, op) for i, op in put_ops if op.value is not None]
        if not kept or not self.index_config:
            return queries, None
        _, vectors = super()._prepare_batch_PUT_queries(kept)
        return queries, vectors

    # -- the way in and out ---------------------------------------------------------------

    def _inward(self, op: Op) -> Op:
        """``op`` with every text it carries redacted (the same value, the same token)."""
        if isinstance(op, GetOp):
            return op._replace(namespace=self._labels(op.namespace), key=self.redact(op.key))
        if isinstance(op, PutOp):
            value = None if op.value is None else self.redact(op.value)
            return op._replace(
                namespace=self._labels(op.namespace), key=self.redact(op.key), value=value
            )
        if isinstance(op, SearchOp):
            return op._replace(
                namespace_prefix=self._labels(op.namespace_prefix),
                filter=None if op.filter is None else self.redact(op.filter),
                query=None if op.query is None else self.redact(op.query),
            )
        if isinstance(op, ListNamespacesOp) and op.match_conditions:
            conditions = tuple(
                c._replace(path=tuple(x if x == "*" else self.redact(x) for x in c.path))
                for c in op.match_conditions
            )
            return op._replace(match_conditions=conditions)
        return op

    def _labels(self, namespace: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(self.redact(label) for label in namespace)

    def _outward(self, result: Result) -> Result:
        if isinstance(result, Item):
            return self._opened(result)
        if isinstance(result, list):
            opened: list[Any] = [self._opened(x) if isinstance(x, Item) else x for x in result]
            return opened
        return result

    def _opened(self, item: Item) -> Item:
        value = open_value(self.sealer, item.value)
        if isinstance(item, SearchItem):
            return SearchItem(
                item.namespace, item.key, value, item.created_at, item.updated_at, item.score
            )
        return Item(
            namespace=item.namespace,
            key=item.key,
            value=value,
            created_at=item.created_at,
            updated_at=item.updated_at,
        )

    # -- filters on sealed values ---------------------------------------------------------

    def _filters_after(self, op: Op) -> bool:
        return isinstance(op, SearchOp) and bool(op.filter) and self.sealer is not None

    def _search_opened(self, op: SearchOp) -> list[SearchItem]:
        """The search's page of the items whose opened values match its filter."""
        wanted, page = op.offset + op.limit, max(SCAN_PAGE, op.offset + op.limit)
        found: list[SearchItem] = []
        start = 0
        while len(found) < wanted:
            scan = op._replace(filter=None, limit=page, offset=start, refresh_ttl=False)
            chunk = super().batch([scan])[0]
            assert isinstance(chunk, list)
            for candidate in chunk:
                opened = self._opened(candidate) if isinstance(candidate, SearchItem) else None
                if isinstance(opened, SearchItem) and matches(opened.value, op.filter or {}):
                    found.append(opened)
            if len(chunk) < page:
                break
            start += page
        hits = found[op.offset : wanted]
        if op.refresh_ttl and hits:  # only the items shown live on, as in SQL
            super().batch([GetOp(h.namespace, h.key, refresh_ttl=True) for h in hits])
        return hits


def matches(value: dict[str, Any], filter: dict[str, Any]) -> bool:
    """Whether ``value`` passes ``filter`` as ``PostgresStore`` filters in SQL: each key's
    value equal, or each of its operators (``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``,
    ``$lte``) holding."""
    for key, wanted in filter.items():
        have = value.get(key)
        if isinstance(wanted, dict) and wanted and all(k.startswith("$") for k in wanted):
            if not all(_holds(have, name, operand) for name, operand in wanted.items()):
                return False
        elif have != wanted:
            return False
    return True


def _holds(have: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(have == operand)
    if operator == "$ne":
        return bool(have != operand)
    if have is None:
        return False  # SQL's comparison with a missing key is NULL: no match
    if operator not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"Unsupported operator: {operator}")
    left, right = _comparable(have, operand)
    if operator == "$gt":
        return bool(left > right)
    if operator == "$gte":
        return bool(left >= right)
    if operator == "$lt":
        return bool(left < right)
    return bool(left <= right)


def _comparable(have: Any, operand: Any) -> tuple[Any, Any]:
    """Numbers as numbers, anything else as its text."""
    numbers = (int, float)
    if isinstance(have, numbers) and isinstance(operand, numbers):
        return have, operand
    return str(have), str(operand)
