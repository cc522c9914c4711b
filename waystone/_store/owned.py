"""Each owner's namespaces apart: an owner's namespace ``("memories",)`` is stored as
``("owner:<digest>", "memories")``, and shown back to that owner without the first label;
another owner's prefix is never reachable from it. The operator (owner ``None``) works on
the namespaces as stored, as a graph's node does in a run with no owner.

The digest (of the owner's name, in letters) keeps an owner's name, which may be an
email, out of the stored labels, and a label free of periods (which a namespace label
may not hold).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

Namespace = tuple[str, ...]
_LETTERS = str.maketrans("0123456789abcdef", "abcdefghijklmnop")


def owner_label(owner: str) -> str:
    """The first label of ``owner``'s namespaces: letters only, so that the redaction of
    every label on its way to Postgres never takes a run of digits for a phone number."""
    return "owner:" + hashlib.sha256(owner.encode()).hexdigest()[:20].translate(_LETTERS)


def owned(namespace: Iterable[str], owner: str | None) -> Namespace:
    """``namespace`` as stored for ``owner`` (``None``: as it is)."""
    given = tuple(namespace)
    return given if owner is None else (owner_label(owner), *given)


def shown(namespace: Iterable[str], owner: str | None) -> Namespace:
    """A stored namespace as ``owner`` sees it: without its owner's label."""
    stored = tuple(namespace)
    if owner is None:
        return stored
    assert stored[:1] == (owner_label(owner),), "an owner reads its own namespaces only"
    return stored[1:]


def owned_op(op: Op, owner: str | None) -> Op:
    """``op`` confined to ``owner``'s namespaces."""
    if owner is None:
        return op
    if isinstance(op, GetOp | PutOp):
        return op._replace(namespace=owned(op.namespace, owner))
    if isinstance(op, SearchOp):
        return op._replace(namespace_prefix=owned(op.namespace_prefix, owner))
    if isinstance(op, ListNamespacesOp):
        conditions = [c for c in op.match_conditions or () if c.match_type != "prefix"]
        prefixes = [c.path for c in op.match_conditions or () if c.match_type == "prefix"]
        path = owned(prefixes[0] if prefixes else (), owner)
        depth = None if op.max_depth is None else op.max_depth + 1
        return op._replace(
            match_conditions=(MatchCondition("prefix", path), *conditions), max_depth=depth
        )
    return op


def shown_result(result: Result, owner: str | None) -> Result:
    """A result of an owner's op, its namespaces as the owner sees them."""
    if owner is None:
        return result
    if isinstance(result, Item):
        return _shown_item(result, owner)
    if isinstance(result, list):
        shown_list: list[Any] = [
            _shown_item(x, owner) if isinstance(x, Item) else shown(x, owner) for x in result
        ]
        return shown_list
    return result


def _shown_item(item: Item, owner: str) -> Item:
    namespace = shown(item.namespace, owner)
    if isinstance(item, SearchItem):
        return SearchItem(
            namespace, item.key, item.value, item.created_at, item.updated_at, item.score
        )
    return Item(
        namespace=namespace,
        key=item.key,
        value=item.value,
        created_at=item.created_at,
        updated_at=item.updated_at,
    )


class OwnedStore(BaseStore):
    """``store()`` (made on first use) confined to ``owner()``'s namespaces, asked at each
    batch: a graph's nodes get it with the owner of the run's thread."""

    def __init__(self, store: Callable[[], BaseStore], owner: Callable[[], str | None]) -> None:
        self._store, self._owner = store, owner

    @property
    def supports_ttl(self) -> bool:  # type: ignore[override]
        return self._store().supports_ttl

    @property
    def ttl_config(self) -> Any:  # type: ignore[override]  # the TTL defaults are its store's
        return getattr(self._store(), "ttl_config", None)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        owner = self._owner()
        found = self._store().batch([owned_op(op, owner) for op in ops])
        return [shown_result(r, owner) for r in found]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        owner = self._owner()
        found = await self._store().abatch([owned_op(op, owner) for op in ops])
        return [shown_result(r, owner) for r in found]


def run_owner(owner_of: Callable[[str], str | None]) -> Callable[[], str | None]:
    """The owner of the thread of the run the caller is a node of (``None`` outside a
    run, or for a thread with no owner)."""
    from langgraph.config import get_config

    def owner() -> str | None:
        try:
            config = get_config()
        except RuntimeError:  # not inside a graph's run: the store as it is
            return None
        thread_id = (config.get("configurable") or {}).get("thread_id")
        return None if thread_id is None else owner_of(str(thread_id))

    return owner
