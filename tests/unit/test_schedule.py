"""Cron schedules: which are valid, the next tick, and the missed-tick policy (the latest
due tick runs once, the earlier ones are counted as missed)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from waystone._runs import schedule
from waystone._runtime.cron_ticks import start_key, tick_thread
from waystone.errors import BadInput

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
EVERY_2S = "* * * * * */2"


@pytest.mark.parametrize("given", ["*/5 * * * *", "0 9 * * 1-5", "@hourly", EVERY_2S])
def test_cron_expressions_are_taken(given: str) -> None:
    assert schedule.check(given) == given


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("every minute", "is not a cron expression"),
        ("61 * * * *", "is not a cron expression"),
        ("", "a cron needs a schedule"),
        (None, "a cron needs a schedule"),
        (5, "a cron needs a schedule"),
    ],
)
def test_bad_schedules_say_what_a_schedule_is(given: object, says: str) -> None:
    with pytest.raises(BadInput, match=says) as refused:
        schedule.check(given)
    assert "e.g." in str(refused.value) or "such as" in str(refused.value)


def test_a_zone_that_does_not_exist_is_refused() -> None:
    with pytest.raises(BadInput, match="IANA"):
        schedule.check("0 9 * * *", "Mars/Olympus_Mons")


def test_next_tick_is_strictly_after() -> None:
    assert schedule.next_tick("*/5 * * * *", T0) == T0 + timedelta(minutes=5)
    assert schedule.next_tick(EVERY_2S, T0 + timedelta(seconds=0.5)) == T0 + timedelta(seconds=2)


def test_next_tick_in_a_zone_is_given_in_utc() -> None:
    # 09:00 in New York on 1 March 2026 (EST, UTC-5) is 14:00 UTC
    assert schedule.next_tick("0 9 * * *", T0, "America/New_York") == T0.replace(hour=14)


def test_latest_tick_at_or_before() -> None:
    assert schedule.latest_tick(EVERY_2S, T0) == T0
    assert schedule.latest_tick(EVERY_2S, T0 + timedelta(seconds=3.9)) == T0 + timedelta(seconds=2)


def test_a_tick_on_time_misses_nothing() -> None:
    tick = schedule.due(EVERY_2S, None, T0, T0 + timedelta(seconds=0.3))
    assert (tick.at, tick.missed, tick.missed_from) == (T0, 0, None)
    assert tick.next == T0 + timedelta(seconds=2)


def test_after_an_outage_only_the_latest_tick_runs() -> None:
    tick = schedule.due("*/5 * * * *", None, T0, T0 + timedelta(hours=2, minutes=1))
    assert tick.at == T0 + timedelta(hours=2)
    assert (tick.missed, tick.missed_from) == (24, T0)  # 12:00 .. 13:55
    assert tick.next == T0 + timedelta(hours=2, minutes=5)


def test_a_long_outage_is_counted_up_to_a_bound() -> None:
    tick = schedule.due(EVERY_2S, None, T0, T0 + timedelta(days=1))
    assert tick.at == T0 + timedelta(days=1)
    assert tick.missed == schedule.MISSED_COUNTED


def test_no_tick_after_the_end_time_runs() -> None:
    end = T0 + timedelta(minutes=12)
    tick = schedule.due("*/5 * * * *", None, T0, T0 + timedelta(hours=1), end)
    assert (tick.at, tick.missed) == (T0 + timedelta(minutes=10), 2)
    assert tick.next > end  # never due again
    late = schedule.due(
        "*/5 * * * *", None, T0 + timedelta(minutes=15), T0 + timedelta(hours=1), end
    )
    assert late.at is None


def test_each_tick_has_its_own_start_key_and_thread() -> None:
    a, b = T0, T0 + timedelta(seconds=2)
    assert start_key("c1", a) == "cron:c1:2026-03-01T12:00:00Z"
    assert start_key("c1", a) != start_key("c1", b) != start_key("c2", b)
    assert tick_thread("c1", a) == tick_thread("c1", a) != tick_thread("c1", b)
