"""Waystone's one retry primitive: bounded exponential backoff with jitter.

:meth:`RetryPolicy.delay` is the pure decision (how long before the next attempt);
:func:`retry` and :func:`aretry` are the thin loop around a call. A loop that must keep
its own shape (a worker's claim loop, attempts counted in the ledger) uses the decision
alone. Each caller declares its policy and which errors it retries where it is. Imports
nothing of Waystone, so any layer may use it.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")
# which errors are retried: their classes, or a test of the error
RetryOn = tuple[type[BaseException], ...] | Callable[[Exception], bool]
# told of every failed attempt that was to be retried: the error, the attempt (from 1),
# and the wait before the next one (None: none left, the error is raised)
OnFailure = Callable[[Exception, int, float | None], None]


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff, with jitter unless ``jitter`` is false: the delay
    before attempt ``n + 1`` lies in half to all of ``min(max_delay_s, base_delay_s *
    2**(n - 1))``, so the retries of many callers spread apart."""

    max_attempts: int = 4
    base_delay_s: float = 0.2
    max_delay_s: float = 5.0
    jitter: bool = True

    def delay(self, attempt: int, rand: float) -> float:
        """Delay before attempt ``attempt + 1`` (``attempt`` >= 1), ``rand`` in [0, 1)."""
        ceiling = min(self.max_delay_s, self.base_delay_s * (2 ** (attempt - 1)))
        if not self.jitter:
            return float(ceiling)
        return float(ceiling * (0.5 + rand / 2))

    @property
    def longest_delay_s(self) -> float:
        """The longest delay before any retry (after the last attempt, at most)."""
        return self.delay(self.max_attempts, 1.0)


def _next_wait(
    policy: RetryPolicy,
    retry_on: RetryOn,
    error: Exception,
    attempt: int,
    rand: Callable[[], float],
    on_failure: OnFailure | None,
) -> float | None:
    """The wait before calling again after ``error`` at ``attempt``; ``None`` to raise it."""
    retried = isinstance(error, retry_on) if isinstance(retry_on, tuple) else retry_on(error)
    if not retried:
        return None
    wait = policy.delay(attempt, rand()) if attempt < policy.max_attempts else None
    if on_failure is not None:
        on_failure(error, attempt, wait)
    return wait


def retry(
    call: Callable[[], T],
    policy: RetryPolicy,
    *,
    retry_on: RetryOn,
    on_failure: OnFailure | None = None,
    sleep: Callable[[float], object] = time.sleep,
    rand: Callable[[], float] = random.random,
) -> T:
    """``call()``, called again after an error ``retry_on`` takes, at most
    ``policy.max_attempts`` times in all; the last error (or one not retried) is raised."""
    attempt = 1
    while True:
        try:
            return call()
        except Exception as exc:
            wait = _next_wait(policy, retry_on, exc, attempt, rand, on_failure)
            if wait is None:
                raise
        sleep(wait)
        attempt += 1


async def aretry(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    retry_on: RetryOn,
    on_failure: OnFailure | None = None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    rand: Callable[[], float] = random.random,
) -> T:
    """:func:`retry` from a coroutine."""
    attempt = 1
    while True:
        try:
            return await call()
        except Exception as exc:
            wait = _next_wait(policy, retry_on, exc, attempt, rand, on_failure)
            if wait is None:
                raise
        await sleep(wait)
        attempt += 1
