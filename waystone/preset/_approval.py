"""Human approval: the interrupt payload and the validation of a person's answer.

A decision names the action it answers twice over: its digest (the tool and exact
arguments a person saw) and its idempotency key (this action of this run, at this
ordinal). An answer that does not match both is refused, so an approval never carries over
to a different action, not even to the same tool and arguments proposed again later.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from waystone.errors import BadInput

Choice = Literal["approve", "reject", "edit"]
CHOICES: tuple[str, ...] = ("approve", "reject", "edit")


@dataclass(frozen=True)
class ApprovalRequest:
    """What ``authorize`` passes to ``interrupt()``: everything a person needs to decide."""

    tool: str
    args: dict[str, Any]
    reason: str
    idempotency_key: str
    digest: str
    risk: str
    ordinal: int

    def to_payload(self) -> dict[str, Any]:
        return {"kind": "approval", **asdict(self)}


@dataclass(frozen=True)
class ApprovalDecision:
    choice: Choice
    digest: str
    key: str
    by: str
    comment: str | None = None
    args: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("extra")
        return data


def _optional_str(raw: dict[str, Any], name: str) -> str | None:
    value = raw.get(name)
    if value is not None and not isinstance(value, str):
        raise BadInput(f"approval field {name!r} must be a string, got {type(value).__name__}")
    return value


_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}


def edited_args(value: object, what: str) -> dict[str, Any]:
    """The new arguments of an edit as a caller gave them (``--args``, the API's
    ``"args"``): a non-empty JSON object. Anything else, ``null`` included, is refused,
    never taken for a plain approval."""
    if isinstance(value, dict) and value:
        return value
    given = (
        "null"
        if value is None
        else "an empty object"
        if value == {}
        else _JSON_TYPES.get(type(value), "a number")
    )
    raise BadInput(
        f"{what} must be a non-empty JSON object of the new arguments, not {given} "
        "(leave it out to approve the action as proposed)"
    )


def parse_decision(raw: object) -> ApprovalDecision:
    """Validate a resume value. Raises :class:`BadInput` with what is wrong."""
    if not isinstance(raw, dict):
        raise BadInput(f"an approval decision must be a JSON object, got {type(raw).__name__}")
    unknown = set(raw) - {"choice", "digest", "key", "by", "comment", "args"}
    if unknown:
        raise BadInput(f"unknown approval field(s): {', '.join(sorted(unknown))}")
    choice = raw.get("choice")
    if choice not in CHOICES:
        raise BadInput(f"approval 'choice' must be one of {', '.join(CHOICES)}, got {choice!r}")
    digest = raw.get("digest")
    if not isinstance(digest, str) or not digest:
        raise BadInput("approval needs the 'digest' of the action it answers")
    key = raw.get("key")
    if not isinstance(key, str) or not key:
        raise BadInput("approval needs the idempotency 'key' of the action it answers")
    by = raw.get("by")
    if not isinstance(by, str) or not by.strip():
        raise BadInput("approval needs 'by': who decided")
    args = raw.get("args")
    if choice == "edit":
        if not isinstance(args, dict) or not args:
            raise BadInput("an 'edit' decision needs 'args': a JSON object of the new arguments")
    elif args is not None:
        raise BadInput(f"'args' only goes with an 'edit' decision, not {choice!r}")
    comment = _optional_str(raw, "comment")
    if choice == "reject" and not comment:
        raise BadInput("a rejection needs a reason ('comment')")
    return ApprovalDecision(
        choice=choice, digest=digest, key=key, by=by, comment=comment, args=args
    )
