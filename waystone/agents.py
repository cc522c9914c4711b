"""Which agents a process knows: the examples, plus those ``WAYSTONE_AGENTS`` names."""

from __future__ import annotations

import importlib
import os
import sys

from waystone.agent import AgentSpec
from waystone.errors import BadInput


def default_agents() -> dict[str, AgentSpec]:
    """The example agents, plus those named by ``WAYSTONE_AGENTS``.

    ``WAYSTONE_AGENTS="mypkg.agents:build_payables,other.mod:AGENT"`` names objects that are
    an :class:`AgentSpec` or a no-argument callable returning one, so the CLI and workers
    know your agents too.
    """
    from waystone.examples import refund

    agents = {"refund": refund.build()}
    for spec in load_agents(os.environ.get("WAYSTONE_AGENTS", "")):
        agents[spec.name] = spec
    return agents


def load_agents(text: str) -> list[AgentSpec]:
    """The agents ``text`` names (``module:attribute``, comma-separated). Modules are found
    in the current directory too, as ``python -m`` finds them: the installed ``waystone``
    command's path starts at its own script's directory instead."""
    found: list[AgentSpec] = []
    refs = [part.strip() for part in text.split(",") if part.strip()]
    if refs:
        _with_cwd_on_path()
    for ref in refs:
        module_name, _, attr = ref.partition(":")
        try:
            obj = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError, ValueError) as exc:
            msg = f"WAYSTONE_AGENTS: cannot load {ref!r} (module:attribute): {exc}"
            raise BadInput(msg) from exc
        spec = obj() if callable(obj) and not isinstance(obj, AgentSpec) else obj
        if not isinstance(spec, AgentSpec):
            raise BadInput(f"WAYSTONE_AGENTS: {ref!r} is not an AgentSpec")
        found.append(spec)
    return found


def _with_cwd_on_path() -> None:
    cwd = os.getcwd()
    if not any(os.path.abspath(entry or os.curdir) == cwd for entry in sys.path):
        sys.path.insert(0, cwd)
