import pytest

from waystone.examples.refund import POLICY
from waystone.preset.policy import PolicyDecision, Rule, RulePolicy


@pytest.mark.parametrize(
    ("amount", "verdict"),
    [
        ("100.00", "allow"),
        ("99.99", "allow"),
        ("100.01", "require_approval"),
        ("120.00", "require_approval"),
        ("not-a-number", "require_approval"),
    ],
)
def test_refund_policy_thresholds(amount: str, verdict: str) -> None:
    args = {"order_id": "1", "amount": amount, "currency": "EUR"}
    assert POLICY.decide("refund", "high", args).verdict == verdict


def test_notifications_are_allowed() -> None:
    assert POLICY.decide("notify_customer", "low", {"to": "a@b.c", "body": "x"}).verdict == "allow"


def test_first_matching_rule_wins_and_default_applies() -> None:
    policy = RulePolicy(
        rules=[Rule("deny", "high risk is denied", risk="high"), Rule("allow", "all else")],
    )
    assert policy.decide("x", "high", {}) == PolicyDecision("deny", "high risk is denied")
    assert policy.decide("x", "low", {}).verdict == "allow"
    assert RulePolicy(rules=[]).decide("x", "low", {}).verdict == "require_approval"
