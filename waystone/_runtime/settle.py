"""A person settles an open effect of a run nobody drives: having checked the provider,
they record that the call was made (with what the provider shows) or that it was not.

Made: the effect is ``confirmed`` with the receipt given (or one naming who recorded it
and why), so the re-run gives that receipt back and never calls again. Not made: it is
``absent``, so the re-run calls again under the same key, as after a lookup that proves
absence. Either way the run is then requeued (``waystone requeue``), as after any look.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from waystone._hints import command
from waystone.errors import BadInput, LeaseLost, TransitionNotAllowed, WaystoneError

if TYPE_CHECKING:
    from waystone._runs.registry import Run
    from waystone._runtime.parts import Parts
    from waystone.effects._ledger import Effect

SETTLES = ("failed", "needs-human")  # the runs nobody drives
OPEN = ("intent", "unknown", "failed", "interrupted")  # what a person may settle


def settled_receipt(by: str, reason: str, given: dict[str, Any] | None) -> dict[str, Any]:
    """The receipt the ledger keeps for an effect a person says was made: the provider's,
    as they give it; else one saying who recorded it and why."""
    return given if given is not None else {"settled_by": by, "reason": reason}


def check_receipt(applied: bool, receipt: Any) -> dict[str, Any] | None:
    """``receipt`` when it fits; :class:`BadInput` saying what is wrong otherwise."""
    if receipt is None:
        return None
    if not applied:
        raise BadInput("--receipt goes with --applied: an absent effect has no receipt")
    if not isinstance(receipt, dict):
        raise BadInput(
            f"a receipt is a JSON object (what the provider shows), not {type(receipt).__name__}"
        )
    # here, not at load: the runtime imports this module, and `status` and `list` start
    # without the effects package
    from waystone.effects._keys import canonical_json

    try:
        canonical_json(receipt)
    except (TypeError, ValueError) as exc:
        raise BadInput(f"a receipt must hold JSON values only: {exc}") from exc
    return receipt


def refusal(run: Run, key: str, effect: Effect | None) -> WaystoneError | None:
    """Why ``effect`` (the ledger's row for ``key``) of ``run`` cannot be settled now, or
    ``None`` when it can. An effect of an earlier run of the thread is its history."""
    thread_id = run.thread_id
    if effect is None or effect.thread_id != thread_id or effect.created_at < run.created_at:
        return BadInput(
            f"run {thread_id} has no effect with key {key!r}; its effects and their keys are "
            f"in {command('history', thread_id, '--json')}"
        )
    if run.state not in SETTLES:
        return TransitionNotAllowed(
            f"run {thread_id} is {run.state}; an effect is settled only while its run is "
            "failed or needs-human (nobody drives it)"
        )
    if effect.status not in OPEN:
        return TransitionNotAllowed(
            f"effect {key} ({effect.tool}) is {effect.status}, not open; only an effect whose "
            f"outcome is open ({', '.join(OPEN)}) is settled"
        )
    return None


def settle(
    parts: Parts,
    thread_id: str,
    key: str,
    *,
    applied: bool,
    receipt: Any,
    by: str,
    reason: str,
) -> dict[str, Any]:
    """Record what a person found at the provider for the open effect ``key`` of the run
    on ``thread_id``, with its event, in one transaction under the run's current lease
    token (a worker that still thinks it holds the run stays fenced out). What was
    recorded: ``key``, ``tool``, ``status``."""
    if not reason.strip():
        raise BadInput("settle needs a reason: what the provider shows")
    given = check_receipt(applied, receipt)
    by = parts.who(by)
    run = parts.registry.get(thread_id)
    found = refusal(run, key, parts.ledger.get(key))
    if found is not None:
        raise found
    status = "confirmed" if applied else "absent"
    kept = settled_receipt(by, reason, given) if applied else None
    what = "made" if applied else "not made (absent at the provider)"
    evidence: dict[str, Any] = {"key": key, "settled": status, "by": by}
    if kept is not None:
        evidence["receipt"] = kept
    try:
        with parts.db.transaction(fence=run.lease_token) as conn:
            rows = parts.db.execute(
                "settle_effect",
                conn=conn,
                key=key,
                thread_id=thread_id,
                status=status,
                receipt=parts.protect(kept),
                confirmation=parts.protect(
                    {"settled": status, "by": by, "reason": reason} if applied else None
                ),
                reason=parts.protect(f"{by} recorded {key} as {what}: {reason}"),
                evidence=parts.protect(evidence),
                actor=by,
            )
    except LeaseLost as exc:
        raise _moved_on(thread_id) from exc
    if not rows:
        raise _moved_on(thread_id)
    return {"key": key, "tool": rows[0]["tool"], "status": status}


def _moved_on(thread_id: str) -> TransitionNotAllowed:
    return TransitionNotAllowed(
        f"run {thread_id} or its effect changed while settling; nothing was recorded: see "
        f"{command('status', thread_id)}"
    )
