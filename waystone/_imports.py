"""Objects named by a setting (``module:attribute``), found as ``python -m`` finds them."""

from __future__ import annotations

import importlib
import os
import sys
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


def _with_cwd_on_path() -> None:
    cwd = os.getcwd()
    if not any(os.path.abspath(entry or os.curdir) == cwd for entry in sys.path):
        sys.path.insert(0, cwd)
