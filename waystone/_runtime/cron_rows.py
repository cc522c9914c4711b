"""A cron as its row in ``waystone.crons`` holds it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Cron:
    cron_id: str
    agent: str
    thread_id: str | None
    owner: str | None  # the API token's owner that made it; None: the operator's
    schedule: str
    timezone: str | None
    input: Any
    metadata: dict[str, Any]
    on_run_completed: str | None
    end_time: datetime | None
    enabled: bool
    next_run_date: datetime
    created_at: datetime
    updated_at: datetime
