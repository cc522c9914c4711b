"""Perform one effect exactly once: ledger first, then the provider, then the receipt.

The runner consults the ledger, follows the reconciliation table
(:mod:`waystone.effects._reconcile`), retries transient failures with bounded backoff
(attempts are counted in Postgres, so they survive a restart), reconciles unknown
outcomes by lookup before any second call, and gives up to a person when it cannot know.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from langgraph.errors import GraphBubbleUp, ParentCommand

from waystone._crash import crash_point
from waystone._hints import requeue_command, settle_commands
from waystone._retry import retry
from waystone.effects import deadline
from waystone.effects._interrupts import again_on_resume, pauses, resumed_in_task
from waystone.effects._ledger import Effect, Ledger, Note
from waystone.effects._receipts import shown
from waystone.effects._reconcile import Step, after_lookup, next_step
from waystone.effects._stop import Stop
from waystone.effects._transport import classify_transport
from waystone.effects.tools import Receipt, Tool
from waystone.errors import (
    LeaseLost,
    PermanentError,
    TransientError,
    UnknownOutcome,
    WaystoneError,
)

logger = logging.getLogger(__name__)

EventFn = Callable[[str, str, dict[str, Any]], None]
Status = Literal["applied", "confirmed", "failed", "needs-human"]


@dataclass(frozen=True)
class EffectResult:
    status: Status
    receipt: dict[str, Any] | None = None
    confirmation: dict[str, Any] | None = None
    reason: str = ""


@dataclass
class EffectRunner:
    ledger: Ledger
    event: EventFn  # (kind, reason, evidence) -> recorded on the run's history
    fence: int | None = None  # the lease token every ledger write carries
    reveal: Callable[[Any], Any] = field(default=lambda value: value)  # vault: real values
    lease_ok: Callable[[], bool] = field(default=lambda: True)
    # monotonic time when the lease may end, less a margin (None: no lease)
    lease_ends: Callable[[], float | None] = field(default=lambda: None)
    # asks Postgres whether the run is still this lease's and running (not cancelled)
    still_held: Callable[[], bool] = field(default=lambda: True)
    progressed: Callable[[], None] = field(default=lambda: None)  # a provider call starts
    sleep: Callable[[float], None] = time.sleep
    rand: Callable[[], float] = field(default=random.random)

    def perform(self, thread_id: str, action: dict[str, Any], tool: Tool) -> EffectResult:
        key = action["key"]
        row: Effect | None = self.ledger.opened(key, self.fence, thread_id)  # authorize's
        fresh = row is not None
        if row is None:
            row, fresh = self.ledger.open_intent(
                key=key,
                thread_id=thread_id,
                ordinal=action["ordinal"],
                tool=tool.name,
                args=action["args"],
                timeout_s=_kept(tool),
                fence=self.fence,
                tool_call_id=action.get("tool_call_id"),
            )
        if fresh:  # the intent of the first attempt is committed: call the provider
            step, after, result = self._apply(thread_id, action, tool, recorded=row)
            if result is not None:
                return result
            return self._continue(thread_id, action, tool, step, after)
        if row.thread_id != thread_id and row.status != "confirmed":
            reason = (
                f"{tool.name} (key {key}) was started by run {row.thread_id}, this run's "
                f"origin, and is {row.status} there: finish that run first"
            )
            self.event("needs-human", reason, {"key": key, "owner_run": row.thread_id})
            return EffectResult("needs-human", reason=reason)
        step = self._step(row.status, tool)
        self.event(
            "effect-resume",
            f"ledger says {row.status}: {step.value}",
            {"key": key, "tool": tool.name, "attempts": row.attempts},
        )
        return self._continue(thread_id, action, tool, step, row)

    def _continue(
        self, thread_id: str, action: dict[str, Any], tool: Tool, step: Step, row: Effect | None
    ) -> EffectResult:
        """Follow the reconciliation table from ``step`` until the effect has a result."""
        key = action["key"]
        while True:
            if step is Step.REUSE:
                assert row is not None
                return EffectResult("confirmed", row.receipt, row.confirmation)
            if step is Step.CONFIRM:
                assert row is not None
                return EffectResult("applied", row.receipt)
            if step is Step.FAILED:
                return EffectResult("failed", reason=(row.error if row else "") or "failed")
            if step is Step.NEEDS_HUMAN:
                return self._needs_human(thread_id, action, tool)
            if step is Step.LOOKUP:
                looked, row = self._lookup(thread_id, key, action["args"], tool, row)
                if isinstance(looked, EffectResult):
                    return looked
                step = looked
                continue
            step, row, result = self._apply(thread_id, action, tool)
            if result is not None:
                return result

    @staticmethod
    def _step(status: str | None, tool: Tool) -> Step:
        return next_step(
            status,  # type: ignore[arg-type]
            has_lookup=tool.lookup is not None,
            dedupes=tool.idempotent_by_key,
        )

    def _needs_human(self, thread_id: str, action: dict[str, Any], tool: Tool) -> EffectResult:
        key, call = action["key"], action.get("tool_call_id")
        called = f"{tool.name} (key {key}" + (f", tool call {call})" if call else ")")
        reason = (
            f"the outcome of {called} is unknown and the tool has neither a lookup nor key "
            f"deduplication: check the provider, then {settle_commands(thread_id, key)}"
        )
        evidence = {"key": key, "tool": tool.name, "args": action["args"]}
        if call:
            evidence["tool_call_id"] = call
        self.event("needs-human", reason, evidence)
        return EffectResult("needs-human", reason=reason)

    def _lookup(
        self, thread_id: str, key: str, args: dict[str, Any], tool: Tool, row: Effect | None
    ) -> tuple[Step | EffectResult, Effect | None]:
        """Ask the provider by key. For a tool without deduplication, absence is trusted
        only once no call can land any more: every call carries the deadline of its
        attempt (counted in the ledger, plus the timeout), which the provider honours up
        to ``settle_s`` late. Returns the next step, or the result when a person must look."""
        found = self._lookup_once(key, args, tool)
        if found is _UNREACHABLE:
            reason = (
                f"cannot reach {tool.name}'s provider to reconcile {key}: once it answers, "
                f"{requeue_command(thread_id)}; or check it yourself, then "
                f"{settle_commands(thread_id, key)}"
            )
            self.event("needs-human", reason, {"key": key})
            return EffectResult("needs-human", reason=reason), row
        if found is None and not tool.idempotent_by_key:
            if tool.settle_s is None:
                reason = (
                    f"{tool.name} (key {key}) may still be in flight: the lookup finds nothing, "
                    "the provider does not deduplicate and does not refuse late requests; "
                    f"check the provider, then {settle_commands(thread_id, key)}"
                )
                self.event("needs-human", reason, {"key": key, "tool": tool.name})
                return EffectResult("needs-human", reason=reason), row
            wait = self.ledger.seconds_to_deadline(key, tool.timeout_s) + tool.settle_s
            if wait > 0:
                self.event(
                    "reconcile-wait",
                    f"absent so far; waiting {wait:.1f}s, until the last call's deadline "
                    "has passed, for a call in flight to land",
                    {"key": key},
                )
                self.sleep(wait)
                found = self._lookup_once(key, args, tool)
        if isinstance(found, dict):
            row = self.ledger.update(
                key,
                "applied",
                receipt=found,
                fence=self.fence,
                note=Note(
                    thread_id,
                    "reconciled",
                    "lookup found the effect: recorded as applied",
                    {"key": key, "receipt": shown(found)},
                ),
            )
            return after_lookup(True), row
        self.event(
            "reconciled",
            "lookup proved the effect absent: applying with the same key",
            {"key": key},
        )
        return after_lookup(False), row

    def _paused(self, thread_id: str, key: str, tool: Tool, exc: Exception, sent: int) -> None:
        """The call raised ``interrupt()`` (or another of LangGraph's control-flow
        exceptions, or ``interrupt()`` refused its resume value), which goes on up to
        LangGraph: recorded interrupted when it may simply be made again, else left open."""
        resumed = resumed_in_task(invalid_resume=not isinstance(exc, GraphBubbleUp))
        if again_on_resume(sent, resumed):
            self._interrupted(thread_id, key, tool, exc)
        else:
            self._left_open(thread_id, key, tool, sent)

    def _interrupted(self, thread_id: str, key: str, tool: Tool, exc: Exception) -> None:
        """The intent is kept as interrupted, so the call made again when the node runs
        again is made, not sent to a person."""
        what = type(exc).__name__
        self.ledger.interrupted(
            key,
            self.fence,
            Note(
                thread_id,
                "effect-interrupted",
                f"{tool.name} raised {what}: it is called again when its node runs again",
                {"key": key, "tool": tool.name, "raised": what},
            ),
        )

    def _left_open(self, thread_id: str, key: str, tool: Tool, sent: int) -> None:
        """The call raised ``interrupt()`` after it may have acted: its intent stays open,
        reconciled on resume as after a crash."""
        what = f"it sent {sent} request(s)" if sent else "it had answered an interrupt"
        self.event(
            "effect-left-open",
            f"{tool.name} raised interrupt() after {what}: it is not simply called again on "
            "resume (code before interrupt() runs again)",
            {"key": key, "tool": tool.name, "sent": sent},
        )

    def _look_after_losing(
        self, thread_id: str, key: str, args: dict[str, Any], tool: Tool
    ) -> None:
        """After a call of unknown outcome whose run this process lost (a cancel, most
        likely: nobody else will reconcile it), ask the provider once and record what it
        found, so the history shows an effect that happened. Best effort."""
        if tool.lookup is None:
            return
        try:
            found = tool.lookup(self.reveal(args), key, tool.timeout_s)
        except Exception:
            logger.warning("could not look up %s after losing its run", key, exc_info=True)
            return
        if isinstance(found, dict):
            self.ledger.late_receipt(thread_id, key, found)

    def _lookup_once(self, key: str, args: dict[str, Any], tool: Tool) -> object:
        lookup = tool.lookup
        assert lookup is not None

        def ask() -> Receipt | None:
            self.progressed()
            return lookup(self.reveal(args), key, tool.timeout_s)

        def noted(exc: Exception, attempt: int, wait: float | None) -> None:
            self.event("lookup-retry", str(exc), {"key": key, "attempt": attempt})

        try:
            return retry(
                ask,
                tool.retry,
                retry_on=(TransientError, UnknownOutcome),
                on_failure=noted,
                sleep=self.sleep,
                rand=self.rand,
            )
        except (TransientError, UnknownOutcome):
            return _UNREACHABLE

    def _call(
        self, tool: Tool, args: dict[str, Any], key: str, row: Effect, sent: list[int]
    ) -> Receipt:
        """``tool.apply`` under its call's deadline; a client's transport error becomes what
        it means (:mod:`waystone.effects._transport`), any other error an unknown outcome:
        the request may have left."""
        ends = row.updated_at.timestamp() + tool.timeout_s  # as the ledger keeps it
        with deadline.call(
            tool.name,
            ends,
            lease_ends=self.lease_ends,
            still_held=self.still_held,
            checked_at=row.fenced_at,
        ) as made:
            try:
                return tool.apply(args, key, tool.timeout_s)
            except (WaystoneError, GraphBubbleUp):  # interrupt() and the like: no error
                raise
            except Exception as exc:
                if pauses(exc):  # interrupt() refused its resume value: asked again
                    raise
                kind = classify_transport(exc) or UnknownOutcome
                raise kind(f"{tool.name}: {type(exc).__name__}: {exc}") from exc
            finally:
                sent.append(made.sent)
                if made.sent == 0 and tool.settle_s is not None and not tool.idempotent_by_key:
                    _warn_no_deadline(tool.name)

    def _apply(
        self,
        thread_id: str,
        action: dict[str, Any],
        tool: Tool,
        recorded: Effect | None = None,
    ) -> tuple[Step, Effect | None, EffectResult | None]:
        """One attempt: commit the intent (or count one more; ``recorded``: the first
        one, just committed), then call the provider and record what it said."""
        key, args = action["key"], action["args"]
        row = recorded or self.ledger.record_intent(
            key=key,
            thread_id=thread_id,
            ordinal=action["ordinal"],
            tool=tool.name,
            args=args,
            timeout_s=_kept(tool),
            fence=self.fence,
            tool_call_id=action.get("tool_call_id"),
        )
        if row.attempts > tool.retry.max_attempts:
            reason = (
                f"{tool.name} failed {row.attempts - 1} times, retries exhausted "
                f"(last error: {row.error}); {requeue_command(thread_id)} once the provider "
                "is fixed"
            )
            self.event("retries-exhausted", reason, {"key": key, "attempts": row.attempts - 1})
            return Step.NEEDS_HUMAN, row, EffectResult("needs-human", reason=reason)
        attempt = row.attempts  # the ledger changes below leave the count as it is
        crash_point("execute:after-intent", tool.name)
        real_args = self.reveal(args)
        if not self.lease_ok():  # frozen past the lease: another worker may own the run now
            raise LeaseLost(f"the lease on {thread_id} may have expired; not calling {tool.name}")
        self.progressed()
        started = time.monotonic()
        sent: list[int] = []  # requests the call sent through Waystone's client
        try:
            receipt = self._call(tool, real_args, key, row, sent)
        except ParentCommand:  # a finished call, handing on to the parent graph
            self.ledger.update(
                key,
                "applied",
                receipt={"raised": "ParentCommand"},
                fence=self.fence,
                note=Note(thread_id, "effect-applied", f"{tool.name} applied", {"key": key}),
            )
            raise
        except GraphBubbleUp as exc:
            if isinstance(exc, Stop):  # a needs-human inside: left open, as by a crash
                raise
            self._paused(thread_id, key, tool, exc, sent[0] if sent else 0)
            raise
        except TransientError as exc:
            row = self.ledger.update(
                key,
                "intent",
                error=str(exc),
                fence=self.fence,
                note=Note(
                    thread_id, "retry", f"transient: {exc}", {"key": key, "attempt": attempt}
                ),
            )
            crash_point("execute:after-transient", tool.name)
            self.sleep(tool.retry.delay(row.attempts, self.rand()))
            return Step.APPLY, row, None
        except PermanentError as exc:
            self.ledger.update(
                key,
                "failed",
                error=str(exc),
                fence=self.fence,
                note=Note(
                    thread_id,
                    "effect-failed",
                    f"permanent: {exc}",
                    {"key": key, "attempt": attempt},
                ),
            )
            return Step.FAILED, row, EffectResult("failed", reason=str(exc))
        except UnknownOutcome as exc:
            elapsed = time.monotonic() - started
            try:
                row = self.ledger.update(
                    key,
                    "unknown",
                    error=str(exc),
                    fence=self.fence,
                    note=Note(
                        thread_id,
                        "unknown-outcome",
                        str(exc),
                        {
                            "key": key,
                            "attempt": attempt,
                            "elapsed_s": round(elapsed, 3),
                            "timeout_s": tool.timeout_s,
                        },
                    ),
                )
            except LeaseLost:  # cancelled or taken over during the call: look once, record
                self._look_after_losing(thread_id, key, args, tool)
                raise
            return self._step("unknown", tool), row, None
        except Exception as exc:  # only what _call lets through: a resume value refused
            if not pauses(exc):
                raise
            self._paused(thread_id, key, tool, exc, sent[0] if sent else 0)
            raise
        crash_point("execute:after-apply", tool.name)
        # A receipt that a crash may lose is reconciled without a person (looked up, or
        # applied again under the key the provider dedupes on): it commits with execute's
        # checkpoint. Otherwise it is committed now, on its own. (A lookup after a crash
        # asks the same provider that confirm's read-back would have asked next.)
        reconcilable = tool.idempotent_by_key or tool.lookup is not None
        try:
            row = self.ledger.update(
                key,
                "applied",
                receipt=receipt,
                fence=self.fence,
                note=Note(
                    thread_id,
                    "effect-applied",
                    f"{tool.name} applied",
                    {"key": key, "receipt": shown(receipt), "attempt": attempt},
                ),
                current=row if reconcilable else None,
            )
        except LeaseLost:  # cancelled or taken over during the call: the money still moved
            self.ledger.late_receipt(thread_id, key, receipt)
            raise
        crash_point("execute:after-receipt", tool.name)
        return Step.CONFIRM, row, EffectResult("applied", row.receipt)  # the redacted copy


_UNREACHABLE = object()


def _kept(tool: Tool) -> float | None:
    """The timeout whose deadline the ledger keeps for a call of ``tool``: only a provider
    that does not deduplicate needs it (a lookup's absence is trusted after it)."""
    return None if tool.idempotent_by_key else tool.timeout_s


_WARNED: set[str] = set()


def _warn_no_deadline(tool: str) -> None:
    """A tool trusted to be refused past its deadline (``settle_s``) sent no request that
    carried it: a lookup's absence may then be trusted too early."""
    if tool not in _WARNED:
        _WARNED.add(tool)
        logger.warning(
            "%s has settle_s but sent no request with its deadline: call "
            "waystone.effects.deadline.before_send() (or use waystone.effects.http) in the "
            "thread that sends, or set settle_s=None",
            tool,
        )
