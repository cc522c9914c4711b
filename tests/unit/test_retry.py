import asyncio

import pytest

from waystone._retry import RetryPolicy, aretry, retry
from waystone.errors import PermanentError, TransientError


@pytest.mark.parametrize("attempt", [1, 2, 3, 4, 10])
def test_backoff_is_exponential_jittered_and_capped(attempt: int) -> None:
    policy = RetryPolicy(max_attempts=5, base_delay_s=0.2, max_delay_s=5.0)
    ceiling = min(5.0, 0.2 * 2 ** (attempt - 1))
    low, high = policy.delay(attempt, 0.0), policy.delay(attempt, 0.999999)
    assert low == pytest.approx(ceiling / 2)
    assert ceiling / 2 <= high <= ceiling
    assert high > low  # jitter spreads retries of many runs apart


def test_delay_grows_until_the_cap() -> None:
    policy = RetryPolicy(base_delay_s=0.1, max_delay_s=1.0)
    delays = [policy.delay(n, 0.5) for n in range(1, 8)]
    assert delays == sorted(delays)
    assert delays[-1] == policy.delay(20, 0.5)


def test_without_jitter_the_delay_is_the_ceiling() -> None:
    policy = RetryPolicy(base_delay_s=0.01, max_delay_s=0.5, jitter=False)
    assert [policy.delay(n, 0.7) for n in range(1, 9)] == [
        0.01,
        0.02,
        0.04,
        0.08,
        0.16,
        0.32,
        0.5,
        0.5,
    ]


def test_the_loops_policies_are_the_backoffs_they_replaced() -> None:
    """The worker's, the ticker's and the migration lock's waits, as they were written by
    hand: 0.5s doubling to 5s (the claim's with jitter), 0.25s doubling to 5s for twenty
    tries, 10ms doubling to 0.5s."""
    from waystone._db import migrations
    from waystone.worker import sync as worker
    from waystone.worker import ticker

    for n in range(1, 12):
        backoff = min(0.5 * 2 ** (n - 1), 5.0)
        assert worker.OUTAGE.delay(n, 0.3) == pytest.approx(backoff * (0.5 + 0.3 / 2))
        assert worker.RECONNECT.delay(n, 0.3) == ticker.OUTAGE.delay(n, 0.3) == backoff
        assert migrations.LOCK_WAIT.delay(n, 0.3) == pytest.approx(min(0.01 * 2 ** (n - 1), 0.5))
    waits = [worker.GIVE_BACK.delay(n, 0.3) for n in range(1, 20)]
    assert waits == [min(0.25 * 2**a, 5.0) for a in range(19)]
    assert worker.GIVE_BACK.max_attempts == 20


class Flaky:
    """Fails with each of ``errors`` in turn, then returns ``"ok"``."""

    def __init__(self, *errors: Exception) -> None:
        self.errors, self.calls = list(errors), 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


POLICY = RetryPolicy(max_attempts=3, base_delay_s=1.0, max_delay_s=10.0)


def test_a_call_is_made_again_after_an_error_it_retries_with_the_policys_waits() -> None:
    call, slept, told = Flaky(TransientError("a"), TransientError("b")), [], []
    got = retry(
        call,
        POLICY,
        retry_on=(TransientError,),
        on_failure=lambda exc, attempt, wait: told.append((str(exc), attempt, wait)),
        sleep=slept.append,
        rand=lambda: 1.0,
    )
    assert (got, call.calls) == ("ok", 3)
    assert slept == [1.0, 2.0]
    assert told == [("a", 1, 1.0), ("b", 2, 2.0)]


def test_the_last_error_is_raised_once_the_attempts_are_spent() -> None:
    call, slept, told = Flaky(*(TransientError(str(n)) for n in range(5))), [], []
    with pytest.raises(TransientError, match="2"):
        retry(
            call,
            POLICY,
            retry_on=lambda exc: isinstance(exc, TransientError),
            on_failure=lambda exc, attempt, wait: told.append((attempt, wait)),
            sleep=slept.append,
            rand=lambda: 0.0,
        )
    assert call.calls == 3
    assert slept == [0.5, 1.0]  # no wait after the last attempt
    assert told == [(1, 0.5), (2, 1.0), (3, None)]


def test_an_error_it_does_not_retry_is_raised_at_once() -> None:
    call, slept, told = Flaky(PermanentError("no")), [], []
    with pytest.raises(PermanentError):
        retry(
            call,
            POLICY,
            retry_on=(TransientError,),
            on_failure=lambda *a: told.append(a),
            sleep=slept.append,
        )
    assert (call.calls, slept, told) == (1, [], [])


def test_the_async_loop_does_the_same() -> None:
    call, slept, told = Flaky(TransientError("a"), ValueError("b")), [], []

    async def acall() -> str:
        return call()

    async def asleep(seconds: float) -> None:
        slept.append(seconds)

    with pytest.raises(ValueError):
        asyncio.run(
            aretry(
                acall,
                POLICY,
                retry_on=(TransientError,),
                on_failure=lambda exc, attempt, wait: told.append((attempt, wait)),
                sleep=asleep,
                rand=lambda: 1.0,
            )
        )
    assert (call.calls, slept, told) == (2, [1.0], [(1, 1.0)])
    assert asyncio.run(aretry(acall, POLICY, retry_on=(TransientError,))) == "ok"
