"""An agent whose one action, a notification to the customer, waits for a person's
approval: its pending arguments hold the customer's email (as a vault token). Loaded by
the real CLI through ``WAYSTONE_AGENTS=tests.support.notify_approval:build``."""

from __future__ import annotations

from waystone import AgentSpec, Check, Rule, RulePolicy
from waystone.examples.refund import NOTIFY, customer_notified
from waystone.preset.proposers import Proposal, ScriptedProposer


def build() -> AgentSpec:
    return AgentSpec(
        name="notify-approval",
        tools={NOTIFY.name: NOTIFY},
        policy=RulePolicy([Rule("require_approval", "a person reads every message")]),
        proposer=ScriptedProposer(
            lambda i: [Proposal(NOTIFY.name, {"to": i["email"], "body": "Your order shipped."})]
        ),
        checks=[Check("customer_notified", customer_notified)],
    )
