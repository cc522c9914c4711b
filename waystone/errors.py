"""Errors that say what happened and what to do next.

Every error Waystone raises derives from :class:`WaystoneError`. Each subclass carries the
CLI exit code it maps to and whether retrying the same call can help, so callers never
parse messages to decide.
"""

from __future__ import annotations

from collections.abc import Iterator

CHAIN_LIMIT = 64  # links of an exception chain walked; deeper ones carry no more meaning


def chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, then what it was raised from (its ``__cause__``, else its ``__context__``),
    and so on: each exception once, at most ``CHAIN_LIMIT``. A chain may loop (an
    exception raised from itself, or from one raised while handling it)."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen and len(seen) < CHAIN_LIMIT:
        seen.add(id(link))
        yield link
        link = link.__cause__ or link.__context__


class WaystoneError(Exception):
    """Base class. ``exit_code`` is what the CLI exits with; ``retryable`` says if a retry helps."""

    exit_code = 1
    retryable = False


class BadInput(WaystoneError):
    """The caller gave malformed or invalid input (exit 2)."""

    exit_code = 2


class UnknownThread(WaystoneError):
    """No run exists with that thread id (exit 3)."""

    exit_code = 3

    def __init__(self, thread_id: str) -> None:
        super().__init__(
            f"unknown thread {thread_id!r}: no run has that thread id "
            "(see `waystone list` for the runs that exist)"
        )
        self.thread_id = thread_id


class UnknownRun(UnknownThread):
    """The thread exists but has no such run, or no run yet (exit 3, as an unknown
    thread). ``next_step``: what the caller can do about it, where they are."""

    def __init__(self, thread_id: str, run_id: str | None = None, next_step: str = "") -> None:
        what = f"no run {run_id!r}" if run_id else "no run yet"
        WaystoneError.__init__(
            self, f"thread {thread_id!r} has {what}" + (f" ({next_step})" if next_step else "")
        )
        self.thread_id, self.run_id = thread_id, run_id


class TransitionNotAllowed(WaystoneError):
    """The run's current state does not allow the requested change (exit 4)."""

    exit_code = 4


class LeaseLost(WaystoneError):
    """Another process holds (or took over) the run's lease; this process must stop."""

    exit_code = 5


class DatabaseUnavailable(WaystoneError):
    """Postgres cannot be reached. Retrying later can help."""

    exit_code = 6
    retryable = True


class SchemaBehind(DatabaseUnavailable):
    """The database's schema is older than this Waystone's: ``waystone migrate`` brings it
    up to date (exit 6, as a database that cannot be reached)."""

    retryable = False


class RunStopped(WaystoneError):
    """The run a command drove ended ``failed`` or ``needs-human`` (exit 7): it is stored
    and can be requeued; the command did its job, the run did not reach its goal."""

    exit_code = 7


class TransientError(WaystoneError):
    """A failure that a bounded retry with backoff can fix (connection reset, 429, 5xx)."""

    retryable = True


class PermanentError(WaystoneError):
    """A failure that no retry can fix (validation, 4xx)."""


class UnknownOutcome(WaystoneError):
    """A call whose effect may or may not have happened (timeout, crash mid-call).

    Never retried blindly: the effect is reconciled by its idempotency key first.
    """


class NeedsHuman(WaystoneError):
    """Only a person can tell how to go on (an effect whose outcome cannot be known: it
    may have happened, and the provider can neither deduplicate it nor be asked): a node
    that raises it ends its run ``needs-human`` with this reason, requeued once someone
    has looked."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class NotDurable(WaystoneError):
    """A Waystone effect was called outside a run Waystone drives, where no ledger can
    make it exactly-once."""
