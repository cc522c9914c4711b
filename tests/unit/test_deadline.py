"""The last check before a request leaves, and the deadline it carries."""

from __future__ import annotations

import time

import pytest

from waystone.effects import deadline
from waystone.errors import LeaseLost


def test_outside_an_effect_nothing_is_checked_or_sent() -> None:
    assert deadline.current() is None
    assert deadline.before_send() == {}


def test_inside_a_call_the_request_carries_its_deadline() -> None:
    with deadline.call("notify", 1_700_000_000.25, lease_ends=lambda: time.monotonic() + 60):
        assert deadline.before_send() == {"Request-Deadline": "1700000000.250"}
    assert deadline.current() is None


def test_a_lease_that_may_have_ended_sends_nothing() -> None:
    with pytest.raises(LeaseLost), deadline.call("n", 0.0, lease_ends=lambda: time.monotonic() - 1):
        pass
    ends = [time.monotonic() + 60]
    with deadline.call("notify", 0.0, lease_ends=lambda: ends[0]):
        ends[0] = time.monotonic() - 1  # lost while the call was being made (a refused renewal)
        with pytest.raises(LeaseLost, match="not calling notify"):
            deadline.before_send()


def test_a_run_no_longer_held_sends_nothing_and_a_held_up_thread_reads_again() -> None:
    reads: list[bool] = []
    held = [True]

    def still_held() -> bool:
        reads.append(held[0])
        return held[0]

    refused = pytest.raises(LeaseLost, match="no longer this lease's")
    with refused, deadline.call("refund", 0.0, still_held=lambda: False):
        pass
    with deadline.call("refund", 0.0, still_held=still_held) as made:
        assert reads == [True]  # read when the call opens
        made.read_at = time.monotonic() - 2 * deadline.RECHECK_S  # held up since: a pause
        held[0] = False  # cancelled meanwhile
        with pytest.raises(LeaseLost):
            deadline.before_send()
    assert reads == [True, False]


def test_a_fresh_fenced_write_stands_for_the_read_and_an_old_one_does_not() -> None:
    reads: list[int] = []

    def still_held() -> bool:
        reads.append(1)
        return True

    with deadline.call("refund", 0.0, still_held=still_held, checked_at=time.monotonic()):
        assert reads == []  # the intent's own write just found the run this lease's
    stale = time.monotonic() - 2 * deadline.RECHECK_S
    with deadline.call("refund", 0.0, still_held=still_held, checked_at=stale):
        assert reads == [1]
