"""Policies live outside the model: what is allowed, denied, or needs a person.

A :class:`RulePolicy` is a list of rules checked in order; the first that matches decides.
Rules match on the tool's name or risk level and on numeric argument thresholds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Literal, Protocol

Verdict = Literal["allow", "deny", "require_approval"]


@dataclass(frozen=True)
class PolicyDecision:
    verdict: Verdict
    reason: str


class Policy(Protocol):
    def decide(self, tool: str, risk: str, args: dict[str, Any]) -> PolicyDecision: ...


@dataclass(frozen=True)
class Rule:
    """One rule. ``tool``/``risk`` of ``None`` match anything.

    ``arg_above=("amount", "100.00")`` matches only when ``args["amount"]`` is a number
    strictly greater than the threshold.
    """

    verdict: Verdict
    reason: str
    tool: str | None = None
    risk: str | None = None
    arg_above: tuple[str, str] | None = None

    def matches(self, tool: str, risk: str, args: dict[str, Any]) -> bool:
        if self.tool is not None and self.tool != tool:
            return False
        if self.risk is not None and self.risk != risk:
            return False
        if self.arg_above is not None:
            name, threshold = self.arg_above
            value = _as_decimal(args.get(name))
            # An argument that is missing or not a number cannot be shown to be under the
            # threshold, so the rule applies: fail closed.
            return value is None or value > Decimal(threshold)
        return True


def _as_decimal(value: object) -> Decimal | None:
    try:
        return Decimal(str(value)) if value is not None else None
    except InvalidOperation:
        return None


@dataclass(frozen=True)
class RulePolicy:
    rules: Sequence[Rule]
    default: PolicyDecision = PolicyDecision("require_approval", "no rule matched")

    def decide(self, tool: str, risk: str, args: dict[str, Any]) -> PolicyDecision:
        for rule in self.rules:
            if rule.matches(tool, risk, args):
                return PolicyDecision(rule.verdict, rule.reason)
        return self.default
