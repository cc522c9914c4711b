"""Log lines that say which run they are about.

A line logged while a run is driven carries its ``thread_id`` (and ``lease_token``, when the
caller gives it in ``extra``): from ``extra``, or else from :func:`about_run`, which marks
the lines of one drive, those of the libraries it calls included.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar, Token

_THREAD_ID: ContextVar[str | None] = ContextVar("waystone_thread_id", default=None)
FORMAT = "%(asctime)s %(levelname)s %(message)s"
FIELDS = ("thread_id", "lease_token")  # shown after the message, as key=value


def about_run(thread_id: str) -> Token[str | None]:
    """Mark this thread's (and context's) log lines as about ``thread_id``, until
    :func:`done_with_run` is given the token."""
    return _THREAD_ID.set(thread_id)


def done_with_run(token: Token[str | None]) -> None:
    _THREAD_ID.reset(token)


class RunContext(logging.Filter):
    """Gives a record the thread id of the run being driven, unless it names one."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "thread_id", None) is None:
            record.thread_id = _THREAD_ID.get()
        return True


class RunFormatter(logging.Formatter):
    """``FORMAT``, then ``thread_id=... lease_token=...`` for the fields a record has."""

    def __init__(self, fmt: str = FORMAT) -> None:
        super().__init__(fmt)

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = [
            f"{name}={value}"
            for name in FIELDS
            if (value := getattr(record, name, None)) is not None
        ]
        if not fields:
            return line
        head, newline, rest = line.partition("\n")  # a traceback follows the fields
        return f"{head} {' '.join(fields)}{newline}{rest}"


def configure(level: int = logging.INFO) -> None:
    """Log to stderr in the format above (what ``worker`` and ``serve`` use)."""
    handler = logging.StreamHandler()
    handler.addFilter(RunContext())
    handler.setFormatter(RunFormatter())
    logging.basicConfig(level=level, handlers=[handler])
