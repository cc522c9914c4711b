"""The classes a checkpoint may be read back as, beyond LangGraph's safe types.

A blob names the class it was made from; loading it imports and calls that class. In
LangGraph's strict mode (``LANGGRAPH_STRICT_MSGPACK``) only its safe types, a graph's state
types and the classes declared here are made (LangGraph's ``allowed_msgpack_modules``):
anything else comes back as its fields, as plain data. Outside it, LangGraph makes every
class and these declarations change nothing. A user's state types are declared as
LangGraph declares them, a class or a ``(module, name)`` pair, or as text
(``WAYSTONE_ALLOWED_MODULES``): ``module:Name`` for one class, ``module`` (or the pair's
one-element form, ``(module,)``) for every class the module defines.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable

from waystone.errors import BadInput

Declared = type | tuple[str, ...] | str
ENV = "WAYSTONE_ALLOWED_MODULES"


def allowed_classes(declared: Iterable[Declared]) -> set[tuple[str, str]]:
    """Every declared class as ``(module, name)``, the key LangGraph checks a blob by."""
    found: set[tuple[str, str]] = set()
    for entry in declared:
        if isinstance(entry, type):
            found.add((entry.__module__, entry.__name__))
        elif isinstance(entry, str):
            module, sep, name = entry.partition(":")
            if sep and not (module.strip() and name.strip()):
                raise BadInput(f"{ENV}: {entry!r} is neither module nor module:Class")
            found |= _classes(module.strip(), name.strip() if sep else None, entry)
        elif isinstance(entry, tuple) and len(entry) in (1, 2) and all(entry):
            found |= _classes(entry[0], entry[1] if len(entry) == 2 else None, entry)
        else:
            raise BadInput(
                f"allowed_modules: {entry!r} is not a class, (module, name), (module,) or "
                "'module:Class'"
            )
    return found


def _classes(module: str, name: str | None, entry: object) -> set[tuple[str, str]]:
    if name is not None:
        return {(module, name)}  # imported only when a blob names it, as LangGraph does
    try:
        loaded = importlib.import_module(module)
    except ImportError as exc:
        raise BadInput(
            f"allowed modules: cannot import {module!r} (from {entry!r}): {exc}; name a "
            "module this process can import, or one class as module:Class"
        ) from exc
    return {
        (module, attr)
        for attr, value in vars(loaded).items()
        if inspect.isclass(value) and value.__module__ == module
    }
