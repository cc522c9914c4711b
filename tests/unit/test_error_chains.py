"""Error translation walks an exception's chain (``__cause__``, else ``__context__``) and
ends on any chain: one with a cycle, one exception raised from itself, or a very long one.
"""

from __future__ import annotations

import psycopg
import pytest

from waystone._db.database import meaning_of
from waystone.errors import DatabaseUnavailable, LeaseLost, chain
from waystone.web.replies import meaning as _meaning


def _two_cycle() -> BaseException:
    a, b = RuntimeError("a"), ValueError("b")
    a.__context__, b.__context__ = b, a
    return a


def _self_cycle() -> BaseException:
    a = RuntimeError("raised from itself")
    a.__cause__ = a
    return a


@pytest.mark.timeout(10)
def test_meaning_of_ends_on_an_exception_chain_with_a_cycle() -> None:
    assert meaning_of(_two_cycle()) is None
    assert meaning_of(_self_cycle()) is None


@pytest.mark.timeout(10)
def test_meaning_of_finds_the_waystone_error_inside_a_cycle() -> None:
    outer, lost = RuntimeError("pipeline aborted"), LeaseLost("taken over")
    outer.__cause__, lost.__context__ = lost, outer
    assert meaning_of(outer) is lost


@pytest.mark.timeout(10)
def test_the_server_ends_on_an_exception_chain_with_a_cycle() -> None:
    assert _meaning(_two_cycle()) is None
    assert _meaning(_self_cycle()) is None
    outer, cut = RuntimeError("outer"), psycopg.OperationalError("cut")
    outer.__context__, cut.__context__ = cut, outer
    assert isinstance(_meaning(outer), DatabaseUnavailable)


@pytest.mark.timeout(10)
def test_a_chain_longer_than_the_bound_is_cut() -> None:
    first = current = RuntimeError("0")
    for n in range(1, 10_000):
        current.__context__ = RuntimeError(str(n))
        current = current.__context__
    walked = list(chain(first))
    assert walked[0] is first and 1 < len(walked) < 10_000


def test_a_chain_follows_the_cause_before_the_context() -> None:
    cause, context, top = ValueError("cause"), KeyError("context"), RuntimeError("top")
    top.__cause__, top.__context__ = cause, context
    assert list(chain(top)) == [top, cause]
    assert list(chain(context)) == [context]
