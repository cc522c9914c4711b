"""Settings read from ``WAYSTONE_*`` environment variables, overridable per call."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


def _env_int(name: str, default: int | None) -> int | None:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() == "none":
        return None
    return int(raw)


def parse_timeouts(text: str) -> dict[str, float]:
    """``"refund=2,notify_customer=5.5"`` -> per-tool timeouts in seconds."""
    found: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if not sep or not name.strip() or seconds <= 0:
            raise ValueError(f"{part!r} is not TOOL=SECONDS (e.g. refund=10)")
        found[name.strip()] = seconds
    return found


def _timeouts_from_env(name: str) -> dict[str, float]:
    try:
        return parse_timeouts(os.environ.get(name, ""))
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


TOOL_MODES = ("ledger", "as-is")  # how a user's graph's ToolNode calls its tools


def _tools_from_env() -> str:
    mode = os.environ.get("WAYSTONE_TOOLS") or "ledger"
    if mode not in TOOL_MODES:
        raise ValueError(
            f"WAYSTONE_TOOLS={mode!r}: give 'ledger' (the default: tool calls through the "
            "effect ledger) or 'as-is' (tools called as LangGraph calls them)"
        )
    return mode


def _declared(text: str) -> tuple[str, ...]:
    """``"mypkg.state,langchain_core.agents:AgentAction"`` -> its entries."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


@dataclass(frozen=True)
class Settings:
    """Where the database is and how to talk to it.

    ``database_url`` unset means: start (or reuse) the embedded Postgres under ``home``.
    ``prepare_threshold`` is psycopg's; set it to ``None`` behind PgBouncer in transaction mode.
    ``allowed_modules``: the classes a checkpoint is read back as, beyond LangGraph's safe
    types (``module:Class``, or ``module`` for every class it defines; see
    :mod:`waystone._checkpointing.allowlist`).
    ``tools``: ``"ledger"`` routes every call of a user's graph's ``ToolNode`` through the
    effect ledger; ``"as-is"`` calls its tools as LangGraph does (docs/tools.md).
    """

    database_url: str | None = None
    home: Path = field(default_factory=lambda: Path(os.environ.get("WAYSTONE_HOME") or ".waystone"))
    prepare_threshold: int | None = 5
    pool_min_size: int = 1
    pool_max_size: int = 8
    lease_seconds: float = 30.0
    model_timeout_s: float = 120.0
    tool_timeouts: dict[str, float] = field(default_factory=dict)
    tool_settle: dict[str, float] = field(default_factory=dict)
    # what a step may take beyond its longest model or tool wait (the database, the checks)
    step_margin_s: float = 30.0
    allowed_modules: tuple[str, ...] = ()
    # a user's graph's ToolNode calls: "ledger" (safe by default) or "as-is" (opted out)
    tools: str = "ledger"

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        values: dict[str, object] = {
            "database_url": os.environ.get("WAYSTONE_DATABASE_URL") or None,
            "home": Path(os.environ.get("WAYSTONE_HOME") or ".waystone"),
            "prepare_threshold": _env_int("WAYSTONE_PREPARE_THRESHOLD", 5),
            "pool_max_size": _env_int("WAYSTONE_POOL_MAX_SIZE", 8) or 8,
            "lease_seconds": float(os.environ.get("WAYSTONE_LEASE_SECONDS") or 30.0),
            "model_timeout_s": float(os.environ.get("WAYSTONE_MODEL_TIMEOUT") or 120.0),
            "tool_timeouts": _timeouts_from_env("WAYSTONE_TOOL_TIMEOUTS"),
            "tool_settle": _timeouts_from_env("WAYSTONE_TOOL_SETTLE"),
            "step_margin_s": float(os.environ.get("WAYSTONE_STEP_MARGIN") or 30.0),
            "allowed_modules": _declared(os.environ.get("WAYSTONE_ALLOWED_MODULES", "")),
            "tools": _tools_from_env(),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]
