"""The tool contract: what a tool declares so that its effect can be made safe.

A tool performs one external effect. It says how risky it is, how long a call may take,
how often a transient failure may be retried, and how it can be reconciled after an
unknown outcome: by the provider deduplicating on the idempotency key
(``idempotent_by_key``) and/or by a ``lookup`` that finds the effect by its key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from waystone._retry import RetryPolicy
from waystone._runs.waits import SignalWait
from waystone.errors import BadInput, PermanentError

Receipt = dict[str, Any]
ApplyFn = Callable[[dict[str, Any], str, float], Receipt]
LookupFn = Callable[[dict[str, Any], str, float], Receipt | None]
ConfirmFn = Callable[[dict[str, Any], str, Receipt, float], Receipt | None]

__all__ = ["ApplyFn", "ConfirmFn", "LookupFn", "Receipt", "RetryPolicy", "Tool"]


@dataclass(frozen=True)
class Tool:
    """One external effect and how to make it safe.

    ``apply(args, key, timeout)`` performs it and returns the provider's receipt.
    ``lookup(args, key, timeout)`` returns the receipt of an effect made with ``key``, or
    ``None`` when the provider proves it absent. ``confirm(args, key, receipt, timeout)``
    reads the effect back; ``None`` means it could not be found.

    ``settle_s`` matters for tools the provider does not deduplicate: a call that timed out
    may still be in flight, so a lookup that finds nothing proves nothing by itself. Every
    call carries its deadline (the time its attempt was counted in the ledger, by
    Postgres' clock, plus ``timeout_s``: the ``Request-Deadline`` header that
    ``waystone.effects.http`` sends, or :func:`waystone.effects.deadline.before_send` for a
    client of the tool's own). Set ``settle_s`` when the provider refuses a request that
    arrives past that deadline, to how late by Postgres' clock it may still apply one (its
    clock's drift, plus a request's processing time): absence is trusted once the deadline
    plus ``settle_s`` has passed. ``None``: the provider does not refuse late requests,
    so a request held by the network may land at any time, absence proves nothing and a
    person must look.
    """

    name: str
    description: str
    args_model: type[BaseModel]
    apply: ApplyFn
    confirm: ConfirmFn
    lookup: LookupFn | None = None
    idempotent_by_key: bool = False
    risk: str = "low"
    timeout_s: float = 30.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    settle_s: float | None = None
    await_signal: SignalWait | None = None

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        """Validated, normalised arguments; :class:`PermanentError` when they are invalid."""
        try:
            model = self.args_model.model_validate(args)
        except ValidationError as exc:
            raise PermanentError(f"invalid arguments for {self.name}: {exc}") from exc
        return model.model_dump(mode="json")

    def validate_edit(self, args: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
        """The arguments after a person's edit; :class:`BadInput` for an unknown field, an
        edit that changes nothing, or a result that does not validate."""
        unknown = sorted(set(changes) - set(self.args_model.model_fields))
        if unknown:
            known = ", ".join(self.args_model.model_fields)
            raise BadInput(f"{self.name} has no argument {', '.join(unknown)} (it has: {known})")
        try:
            edited = self.validate({**args, **changes})
        except PermanentError as exc:
            raise BadInput(str(exc)) from exc
        if edited == self.validate(args):
            raise BadInput("the edit changes nothing; use `approve` without --args")
        return edited

    def schema(self) -> dict[str, Any]:
        """The OpenAI-style function schema a chat model is bound to."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.args_model.model_json_schema(),
            },
        }
