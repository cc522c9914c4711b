import pytest

from waystone._runs.states import ALLOWED, STATES, is_allowed, transition_pairs


def test_table_matches_design() -> None:
    assert set(STATES) == {"queued", "running", "waiting", "done", "failed", "needs-human"}
    assert ALLOWED["done"] == frozenset()
    assert is_allowed("queued", "running")
    assert is_allowed("failed", "queued")
    assert is_allowed("needs-human", "failed")
    assert not is_allowed("queued", "done")
    assert is_allowed("queued", "failed")
    assert not is_allowed("done", "queued")
    assert not is_allowed("waiting", "done")


@pytest.mark.parametrize("src", STATES)
def test_no_state_moves_to_itself(src: str) -> None:
    assert not is_allowed(src, src)


def test_pairs_are_sorted_and_complete() -> None:
    pairs = transition_pairs()
    assert pairs == sorted(pairs)
    assert len(pairs) == sum(len(v) for v in ALLOWED.values()) == 13
    assert ("queued", "failed") in pairs  # the added edge: cancelling a queued run
