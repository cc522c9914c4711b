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


@dataclass(frozen=True)
class Settings:
    """Where the database is and how to talk to it.

    ``database_url`` unset means: start (or reuse) the embedded Postgres under ``home``.
    ``prepare_threshold`` is psycopg's; set it to ``None`` behind PgBouncer in transaction mode.
    """

    database_url: str | None = None
    home: Path = field(default_factory=lambda: Path(".waystone"))
    prepare_threshold: int | None = 5
    pool_min_size: int = 1
    pool_max_size: int = 8
    lease_seconds: float = 30.0

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        values: dict[str, object] = {
            "database_url": os.environ.get("WAYSTONE_DATABASE_URL") or None,
            "home": Path(os.environ.get("WAYSTONE_HOME") or ".waystone"),
            "prepare_threshold": _env_int("WAYSTONE_PREPARE_THRESHOLD", 5),
            "pool_max_size": _env_int("WAYSTONE_POOL_MAX_SIZE", 8) or 8,
            "lease_seconds": float(os.environ.get("WAYSTONE_LEASE_SECONDS") or 30.0),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]
