"""What an idle ``worker --until-idle`` waits for: a lease nobody renews, up to a limit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from waystone._runs.lease_wait import MARGIN_S, HeldLease, LeaseWatch

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def held(thread_id: str, expires_in: float, token: int = 1, at: float = 0.0) -> HeldLease:
    """A lease expiring ``expires_in`` seconds after a look made ``at`` seconds from NOW."""
    return HeldLease(
        thread_id, token, "host:ns:1:ab", NOW + timedelta(seconds=at + expires_in), expires_in
    )


def test_no_lease_held_is_idle() -> None:
    assert LeaseWatch().look([]).wait_s is None


def test_a_lease_is_waited_for_until_just_past_its_expiry_and_said_once() -> None:
    watch = LeaseWatch(relook_s=5.0)
    first = watch.look([held("t", 2.0)])
    assert first.wait_s == 2.0 + MARGIN_S and [x.thread_id for x in first.new] == ["t"]
    again = watch.look([held("t", 1.0, at=1.0)])  # the same expiry, a second later
    assert again.wait_s == 1.0 + MARGIN_S and again.new == ()


def test_a_long_lease_is_looked_at_again_every_relook() -> None:
    assert LeaseWatch(relook_s=5.0).look([held("t", 30.0)]).wait_s == 5.0


def test_a_renewed_lease_is_left_to_its_live_holder() -> None:
    watch = LeaseWatch()
    watch.look([held("t", 30.0)])
    renewed = held("t", 30.0, at=10.0)  # its expiry moved: the holder heartbeats
    assert watch.look([renewed]).wait_s is None
    assert watch.look([held("t", 20.0, at=20.0)]).wait_s is None  # and stays left to it


def test_a_new_token_is_a_new_lease() -> None:
    watch = LeaseWatch()
    watch.look([held("t", 30.0)])
    watch.look([held("t", 30.0, at=10.0)])  # renewed
    taken = watch.look([held("t", 3.0, token=2, at=10.0)])
    assert taken.wait_s == 3.0 + MARGIN_S and [x.token for x in taken.new] == [2]


def test_a_lease_past_the_limit_is_said_not_waited_for() -> None:
    watch = LeaseWatch(limit_s=300.0)
    wait = watch.look([held("far", 600.0)])
    assert wait.wait_s is None and [x.thread_id for x in wait.beyond] == ["far"]


def test_the_soonest_lease_within_the_limit_sets_the_wait() -> None:
    wait = LeaseWatch(limit_s=300.0, relook_s=5.0).look(
        [held("near", 1.5), held("later", 4.0), held("far", 900.0)]
    )
    assert wait.wait_s == 1.5 + MARGIN_S
    assert {x.thread_id for x in wait.new} == {"near", "later"}
    assert [x.thread_id for x in wait.beyond] == ["far"]


def test_an_expired_lease_not_yet_claimed_is_claimed_at_once() -> None:
    assert LeaseWatch().look([held("t", -0.5)]).wait_s == MARGIN_S


def dead(thread_id: str) -> HeldLease:
    return HeldLease(thread_id, 1, "here:ns:99:ab", NOW + timedelta(seconds=30), 30.0, dead=True)


def test_a_dead_owners_lease_is_offered_until_claimed_then_waited_for() -> None:
    watch = LeaseWatch(relook_s=5.0)
    first = watch.look([dead("t")])
    assert first.take == (dead("t"),) and first.wait_s == MARGIN_S
    assert watch.look([dead("t")]).take == (dead("t"),)  # no claim tried yet: offered again
    watch.claiming(dead("t"))
    again = watch.look([dead("t")])  # its claim failed: left to expire, as any other
    assert again.take == () and again.wait_s == 5.0


def test_every_lease_a_dead_owner_left_is_offered_until_its_claim_is_tried() -> None:
    watch = LeaseWatch(relook_s=5.0)
    both = watch.look([dead("a"), dead("b")])
    assert [x.thread_id for x in both.take] == ["a", "b"]
    watch.claiming(dead("a"))  # the worker took "a" and went to drive it
    left = watch.look([dead("b")])
    assert [x.thread_id for x in left.take] == ["b"] and left.wait_s == MARGIN_S
