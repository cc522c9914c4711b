"""Every string inside a value mapped by a function, each container kept as its own type.

Redaction changes the text a value holds and nothing else: LangGraph and its serializer
tell types apart (a DeltaChannel's snapshot is a NamedTuple it recognises by type; a set,
a dataclass, a pydantic model, a ``Send`` or an ``Interrupt`` is stored as itself), so a
container comes back of its own type, and a value whose strings all stay the same comes
back as the very object it was (its serialized bytes are then the stock saver's).
"""

from __future__ import annotations

import copy
import dataclasses
import sys
from collections import deque
from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any

Walk = Callable[..., Any]  # (value, the dict key it sits under, if any) -> mapped value
NumberFn = Callable[[int, str | None], Any]  # (a number, its dict key) -> it, or what replaces it
_LEAVES = frozenset({int, float, bool, type(None), bytes, bytearray})
_OPAQUE = (Enum, int, float, bytes, bytearray, memoryview, type)  # no text to map


def string_mapper(text: Callable[[str], str], number: NumberFn | None = None) -> Walk:
    """A function that returns its argument with every string in it (dict keys included)
    replaced by ``text(string)``, and every plain int by ``number(int, key)`` when given
    (``key``: the dict key it sits under, through lists and tuples; it tells a phone number
    from a count). A node's name in a ``Send`` is left as it is: it routes the packet."""

    def walk(value: Any, key: str | None = None) -> Any:
        kind = type(value)
        if kind is str:
            return text(value) if value else value
        if kind is int and number is not None:
            return number(value, key)
        if kind in _LEAVES:  # most of a state: numbers, flags, None (no subclass check)
            return value
        if kind is dict:
            return {walk(k): walk(v, k if type(k) is str else None) for k, v in value.items()}
        if kind is list:
            return [walk(v, key) for v in value]
        if kind is tuple:
            return tuple([walk(v, key) for v in value])
        return _other(value, walk, text)

    return walk


def _other(value: Any, walk: Walk, text: Callable[[str], str]) -> Any:
    """The rarer types, each rebuilt only when a string in it changed."""
    if isinstance(value, _OPAQUE):
        return value
    if isinstance(value, str):  # a subclass: serialized as a plain string anyway
        plain = str.__str__(value)
        mapped = text(plain)
        return value if mapped == plain else mapped
    if isinstance(value, tuple):
        items = [walk(v) for v in value]
        if _same(items, value):
            return value
        make = getattr(type(value), "_make", None)  # a NamedTuple's
        return make(items) if make is not None else type(value)(items)
    if isinstance(value, dict):
        pairs = [(walk(k), walk(v)) for k, v in value.items()]
        if _same((x for pair in pairs for x in pair), (x for kv in value.items() for x in kv)):
            return value
        mapping = copy.copy(value)  # keeps what the subclass carries (a default factory)
        mapping.clear()
        mapping.update(pairs)
        return mapping
    if isinstance(value, list | set | frozenset | deque):
        items = [walk(v) for v in value]
        if _same(items, value):
            return value
        if isinstance(value, deque):
            return type(value)(items, value.maxlen)
        if isinstance(value, list):
            seq = copy.copy(value)
            seq[:] = items
            return seq
        return type(value)(items)
    # LangGraph's and pydantic's types, looked up only once loaded: a value of theirs cannot
    # exist before, and a command that only reads runs never imports them
    types = sys.modules.get("langgraph.types")
    if types is not None and isinstance(value, types.Send):
        arg = walk(value.arg)
        if _same([arg], [value.arg]):
            return value
        sent = copy.copy(value)
        sent.arg = arg
        return sent
    if isinstance(value, BaseException):
        return _exception(value, walk)
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        changed = _changed(value.__dict__, walk) | _changed(value.__pydantic_extra__, walk)
        return value.model_copy(update=changed) if changed else value
    v1 = sys.modules.get("pydantic.v1")
    if v1 is not None and isinstance(value, v1.BaseModel):
        changed = _changed(value.__dict__, walk)
        return value.copy(update=changed) if changed else value
    if dataclasses.is_dataclass(value):
        fields = {
            f.name: getattr(value, f.name)
            for f in dataclasses.fields(value)
            if hasattr(value, f.name)  # a field with no default that was never set
        }
        changed = _changed(fields, walk)
        if not changed:
            return value
        out = copy.copy(value)
        for name, mapped in changed.items():
            object.__setattr__(out, name, mapped)  # a frozen dataclass too
        return out
    return value  # no strings LangGraph would store (a date, a UUID, a Decimal ...)


def _exception(error: BaseException, walk: Walk) -> BaseException:
    """An error of the same class with its arguments and attributes mapped (a failed
    task's error is kept as a pending write, stored as its repr). Made without calling its
    constructor, whose parameters need not be its arguments."""
    args = walk(error.args)
    attributes = _changed(vars(error), walk)
    if _same(args, error.args) and not attributes:
        return error
    try:
        out = type(error).__new__(type(error), *args)
        out.args = args
        out.__dict__.update(vars(error), **attributes)
    except Exception:  # a class that cannot be made so: its text, under a plain error
        return RuntimeError(f"{type(error).__name__}: {walk(str(error))}")
    return out


def _changed(fields: dict[str, Any] | None, walk: Walk) -> dict[str, Any]:
    out = {}
    for name, old in (fields or {}).items():
        new = walk(old)
        if not _same([new], [old]):
            out[name] = new
    return out


def _same(new: Iterable[Any], old: Iterable[Any]) -> bool:
    """Whether no string changed: ``walk`` rebuilds plain containers, so equal, not
    identical, is enough."""
    return all(a is b or a == b for a, b in zip(new, old, strict=True))
