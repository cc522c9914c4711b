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
    with deadline.call("notify", 1_700_000_000.25, time.monotonic() + 60):
        assert deadline.before_send() == {"Request-Deadline": "1700000000.250"}
    assert deadline.current() is None


def test_a_lease_that_may_have_ended_sends_nothing() -> None:
    with pytest.raises(LeaseLost), deadline.call("notify", time.time() + 30, time.monotonic() - 1):
        pass
    ends = time.monotonic() + 0.05
    with deadline.call("notify", time.time() + 30, ends):
        while time.monotonic() < ends:  # frozen past the lease's end between the checks
            time.sleep(0.01)
        with pytest.raises(LeaseLost, match="not calling notify"):
            deadline.before_send()
