import pytest

from waystone.effects.tools import RetryPolicy


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
