"""Objects named by a setting (``module:attribute``), found as ``python -m`` finds them."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
from pathlib import Path
from typing import Any

from waystone.errors import BadInput


def import_object(setting: str, ref: str) -> Any:
    """The object ``ref`` (``module:attribute``) names. Modules are found in the current
    directory too, as ``python -m`` finds them: the installed ``waystone`` command's path
    starts at its own script's directory instead."""
    _with_cwd_on_path()
    module_name, _, attr = ref.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise BadInput(f"{setting}: cannot load {ref!r} (module:attribute): {exc}") from exc


# A worker's threads (its slots, its ticker, its deliverer) load files at once: a module is
# in sys.modules before its body has run, so loading is one at a time.
_LOADING = threading.RLock()


def import_file(setting: str, file: Path, attr: str, prefix: str = "") -> Any:
    """The attribute ``attr`` of the Python file ``file`` (loaded once, under a module name
    made of its folder and name); :class:`BadInput` naming ``setting`` if it cannot be."""
    name = prefix + "_".join(file.with_suffix("").parts[-2:]).replace(" ", "_").lstrip(".")
    with _LOADING:
        loaded = sys.modules.get(name)
        if loaded is not None and getattr(loaded, "__file__", None) == str(file):
            return getattr(loaded, attr)
        spec = importlib.util.spec_from_file_location(name, file)
        if spec is None or spec.loader is None or not file.is_file():
            raise BadInput(f"{setting}: no Python file {file}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
            return getattr(module, attr)
        except Exception as exc:  # the user's module: whatever it raises, it is unusable
            sys.modules.pop(name, None)
            raise BadInput(
                f"{setting}: cannot load {file}:{attr}: {type(exc).__name__}: {exc}"
            ) from exc


def _with_cwd_on_path() -> None:
    cwd = os.getcwd()
    if not any(os.path.abspath(entry or os.curdir) == cwd for entry in sys.path):
        sys.path.insert(0, cwd)
