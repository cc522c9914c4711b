"""Effects made inside a node of any graph, through the effect ledger, exactly once.

:func:`effect` turns a plain function (sync or async) that makes one external effect into
a :class:`~waystone.effects.tools.Tool` and runs every call of it through
:class:`~waystone.effects._runner.EffectRunner`: intent committed before the call, receipt
after, an optional read-back, and on a re-executed node the reconciliation table
(reuse, confirm only, look up, re-apply with the same key only when safe, otherwise
``needs-human``). :mod:`waystone.effects.lc_tools` does the same for langchain-core tools.

Called where Waystone does not drive the graph, an effect raises
:class:`~waystone.errors.NotDurable` rather than calling through: a silent call without
the ledger is the double effect this exists to prevent. A test of the graph on another
saver opts out explicitly with :func:`~waystone.effects.context.without_ledger`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import inspect
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from waystone._crash import crash_point
from waystone._retry import retry
from waystone.effects._keys import canonical_json, effect_key
from waystone.effects._ledger import Note
from waystone.effects._stop import STOPS, stop_if_routed
from waystone.effects.context import CALLS, CallSite, call_site
from waystone.effects.tools import Receipt, RetryPolicy, Tool
from waystone.errors import NeedsHuman, PermanentError, TransientError, UnknownOutcome

T = TypeVar("T")
Given = dict[str, Any]  # the call's arguments, with ``key``, ``receipt`` and ``timeout_s``
Call = Callable[[Given], Any]  # a user's function adapted to take what it names of Given

RESERVED = ("key", "timeout_s")  # parameters an effect function is given, not called with


class _AnyArgs(BaseModel):
    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True)
class EffectSpec:
    """An effect of a node and how to make it safe; ``receipt_of`` turns what ``apply`` (or
    ``lookup``) returned into the receipt the ledger keeps, ``result_of`` a receipt into
    what the caller gets back."""

    name: str
    description: str
    apply: Call
    lookup: Call | None = None
    confirm: Call | None = None
    idempotent_by_key: bool = False
    timeout_s: float = 30.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    settle_s: float | None = None
    receipt_of: Callable[[str, Any], Receipt] = field(
        default=lambda name, value: _dict(name, value)
    )
    result_of: Callable[[Receipt], Any] = field(default=lambda receipt: receipt)

    def tool(self, loop: asyncio.AbstractEventLoop | None) -> Tool:
        """The tool the runner performs; with ``loop``, coroutine functions among ``apply``,
        ``lookup`` and ``confirm`` are run on it (the runner itself runs in a thread)."""

        def run(fn: Call, given: Given) -> Any:
            value = fn(given)
            if inspect.isawaitable(value):
                assert loop is not None, f"{self.name}: a coroutine needs the async call"
                return _on_loop(loop, value)
            return value

        def apply(args: dict[str, Any], key: str, timeout: float) -> Receipt:
            return self.receipt_of(self.name, run(self.apply, _given(args, key, timeout)))

        def lookup(args: dict[str, Any], key: str, timeout: float) -> Receipt | None:
            assert self.lookup is not None
            found = run(self.lookup, _given(args, key, timeout))
            return None if found is None else self.receipt_of(self.name, found)

        def confirm(
            args: dict[str, Any], key: str, receipt: Receipt, timeout: float
        ) -> Receipt | None:
            if self.confirm is None:
                return receipt
            given = {**_given(args, key, timeout), "receipt": self.result_of(receipt)}
            seen = run(self.confirm, given)
            return None if seen is None else _dict(f"{self.name}'s confirm", seen)

        return Tool(
            name=self.name,
            description=self.description,
            args_model=_AnyArgs,
            apply=apply,
            confirm=confirm,
            lookup=lookup if self.lookup is not None else None,
            idempotent_by_key=self.idempotent_by_key,
            timeout_s=self.timeout_s,
            retry=self.retry,
            settle_s=self.settle_s,
        )

    def perform(self, site: CallSite, args: dict[str, Any], tool_call_id: str | None) -> Any:
        """Run the call through the ledger (blocking); what the caller gets back."""
        key = self._key(site, args, tool_call_id)
        try:
            return self._perform(site, self.tool(None), args, key, tool_call_id)
        except STOPS as exc:
            raise stop_if_routed(exc) from exc.__cause__

    async def aperform(self, site: CallSite, args: dict[str, Any], tool_call_id: str | None) -> Any:
        """The same from a coroutine: the ledger's work in a thread, the user's coroutines
        on this loop."""
        key = self._key(site, args, tool_call_id)  # here: the count is this task's
        tool = self.tool(asyncio.get_running_loop())
        try:
            return await _in_own_thread(self._perform, site, tool, args, key, tool_call_id)
        except STOPS as exc:
            raise stop_if_routed(exc) from exc.__cause__

    def _key(self, site: CallSite, args: dict[str, Any], tool_call_id: str | None) -> str:
        """The call's key. Which call of its task it is: the model's tool call id when
        there is one (it is in the checkpointed messages), else the count of identical
        calls before it."""
        redacted = site.context.redact(args)
        if tool_call_id:
            call = f"tool-call:{tool_call_id}"
        else:
            call = f"call:{CALLS.next(site.execution, self.name, redacted)}"
        return effect_key(site.namespace, site.task, call, self.name, redacted)

    def _perform(
        self, site: CallSite, tool: Tool, args: dict[str, Any], key: str, call: str | None
    ) -> Any:
        site.context.flush(site.thread_id)  # the checkpoint the key derives from, kept
        runner = site.context.runner(site.thread_id, site.fence)
        action = {"key": key, "ordinal": site.step, "args": args, "tool_call_id": call}
        result = runner.perform(site.thread_id, action, tool)
        if result.status == "failed":
            raise PermanentError(f"{self.name} (key {key}) failed: {result.reason}")
        if result.status == "needs-human":
            raise NeedsHuman(result.reason)
        receipt = result.receipt or {}
        if result.status == "applied" and self.confirm is not None:
            _confirm(site, tool, key, args, receipt)
        return self.result_of(site.context.reveal(receipt))

    def direct(self, args: dict[str, Any]) -> Any:
        """A call without the ledger (inside ``without_ledger``): the function, at once."""
        key = effect_key("", "", "without-ledger", self.name, args)
        return self.apply(_given(args, key, self.timeout_s))


def effect(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    idempotent_by_key: bool = False,
    lookup: Callable[..., Any] | None = None,
    confirm: Callable[..., Any] | None = None,
    timeout_s: float = 30.0,
    retry: RetryPolicy | None = None,
    settle_s: float | None = None,
) -> Any:
    """Make ``fn`` an effect that a node of any graph Waystone drives makes exactly once.

    ``fn`` makes one external effect and returns the provider's receipt: a dict of JSON
    values (anything else is taken for an unknown outcome, since the effect may have
    happened). Its parameters are the call's arguments, which must be JSON values; a
    parameter ``key`` gets the idempotency key to send to the provider, ``timeout_s``
    the call's budget. The decorated function is called with the arguments alone
    (``send_email(to=..., body=...)``) and returns the receipt (personal data as given,
    not the vault's tokens). An async ``fn`` (and async ``lookup`` / ``confirm``) gives
    an async effect, to await in an async node.

    ``idempotent_by_key``: the provider deduplicates on the key, so a call of unknown
    outcome is sent again with it. ``lookup`` (called with the arguments it names, of the
    call's, ``key`` and ``timeout_s``) returns the receipt of the effect made with the
    key, or ``None`` when the provider proves it absent. ``confirm`` (the same, and
    ``receipt``) reads the effect back after it was applied and returns what the
    provider shows (a dict), ``None`` when it does not show it (``needs-human``).
    ``timeout_s``, ``retry`` and ``settle_s`` are :class:`~waystone.effects.tools.Tool`'s.

    The key derives from the run's key namespace, the task's identity in LangGraph, the
    count of identical calls before it in the task, the name and the canonical arguments
    (:func:`~waystone.effects._keys.effect_key`): a re-executed node (crash, ``interrupt()``
    and resume, requeue) makes the same calls with the same keys, and the ledger gives
    back the receipts of those already made. The ledger's ordinal is LangGraph's step of
    the task. An effect that ends ``failed`` raises
    :class:`~waystone.errors.PermanentError`; one that needs a person,
    :class:`~waystone.errors.NeedsHuman` (the run ends ``needs-human``). Outside a run
    Waystone drives, :class:`~waystone.errors.NotDurable` (see
    :func:`~waystone.effects.context.without_ledger`).
    """

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        parameters = _parameters(fn)
        spec = EffectSpec(
            name=name or fn.__name__,
            description=inspect.getdoc(fn) or "",
            apply=_adapt(fn),
            lookup=_adapt(lookup) if lookup is not None else None,
            confirm=_adapt(confirm) if confirm is not None else None,
            idempotent_by_key=idempotent_by_key,
            timeout_s=timeout_s,
            retry=retry or RetryPolicy(),
            settle_s=settle_s,
        )

        def arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
            return _bound(spec.name, parameters, args, kwargs)

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def acall(*args: Any, **kwargs: Any) -> Any:
                given = arguments(args, kwargs)
                site = call_site(spec.name)
                if site is None:
                    return await spec.direct(given)
                return await spec.aperform(site, given, None)

            acall.spec = spec  # type: ignore[attr-defined]
            return acall

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            given = arguments(args, kwargs)
            site = call_site(spec.name)
            if site is None:
                return spec.direct(given)
            return spec.perform(site, given, None)

        call.spec = spec  # type: ignore[attr-defined]
        return call

    return wrap(fn) if fn is not None else wrap


def _confirm(site: CallSite, tool: Tool, key: str, args: dict[str, Any], receipt: Receipt) -> None:
    """Read the applied effect back and record the confirmation; :class:`NeedsHuman` when
    the provider cannot be asked or does not show it."""
    ledger, reveal = site.context.ledger, site.context.reveal

    def noted(exc: Exception, attempt: int, wait: float | None) -> None:
        if wait is not None:
            evidence = {"key": key, "attempt": attempt}
            site.context.event(site.thread_id, site.fence, "confirm-retry", str(exc), evidence)

    try:
        seen = retry(
            lambda: tool.confirm(reveal(args), key, reveal(receipt), tool.timeout_s),
            tool.retry,
            retry_on=(TransientError, UnknownOutcome),
            on_failure=noted,
        )
    except (TransientError, UnknownOutcome, PermanentError) as exc:
        reason = f"could not read back {tool.name} ({key}): {exc}"
        site.context.event(site.thread_id, site.fence, "confirm-failed", reason, {"key": key})
        raise NeedsHuman(reason) from exc
    crash_point("confirm:after-lookup", tool.name)
    if seen is None:
        reason = f"{tool.name} was applied but the provider does not show it (key {key})"
        site.context.event(site.thread_id, site.fence, "confirm-failed", reason, {"key": key})
        raise NeedsHuman(reason)
    ledger.update(
        key,
        "confirmed",
        confirmation=seen,
        fence=site.fence,
        note=Note(site.thread_id, "effect-confirmed", f"{tool.name} read back", {"key": key}),
        # a read-back is safe to repeat: it commits with the task's checkpoint
        current=ledger.written(key, site.fence, site.thread_id),
    )
    crash_point("confirm:after-record", tool.name)


def _dict(name: str, value: Any) -> Receipt:
    """``value`` as a receipt the ledger can keep; an :class:`UnknownOutcome` when it is
    none (the effect may have happened: it is reconciled, never taken for a failure)."""
    if not isinstance(value, dict):
        raise UnknownOutcome(
            f"{name} returned {type(value).__name__}, not a dict: return the provider's "
            "receipt as a dict of JSON values"
        )
    try:
        canonical_json(value)
    except (TypeError, ValueError) as exc:
        raise UnknownOutcome(f"{name} returned a receipt that is not JSON: {exc}") from exc
    return value


def _given(args: dict[str, Any], key: str, timeout: float) -> Given:
    return {**args, "key": key, "timeout_s": timeout}


def _adapt(fn: Callable[..., Any]) -> Call:
    """``fn`` called with the names it takes of what a call gives (all, with ``**``)."""
    parameters = inspect.signature(fn).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return lambda given: fn(**given)
    names = {p.name for p in parameters}
    return lambda given: fn(**{k: v for k, v in given.items() if k in names})


def _parameters(fn: Callable[..., Any]) -> inspect.Signature:
    """The signature the decorated function is called with: ``fn``'s, less the reserved."""
    signature = inspect.signature(fn)
    for parameter in signature.parameters.values():
        if parameter.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.VAR_POSITIONAL):
            raise TypeError(
                f"{fn.__name__}: an effect's arguments are recorded by name; "
                f"{parameter.name!r} cannot be passed by name"
            )
        if parameter.name == "receipt":
            raise TypeError(f"{fn.__name__}: 'receipt' is the name confirm's receipt is given by")
    kept = [p for p in signature.parameters.values() if p.name not in RESERVED]
    return signature.replace(parameters=kept)


def _bound(
    name: str, signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The call's arguments by name, defaults applied; a :class:`TypeError` saying what is
    wrong when they do not fit ``signature`` or are not JSON values."""
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"{name}: {exc}") from exc
    bound.apply_defaults()
    given: dict[str, Any] = {}
    for parameter, value in bound.arguments.items():
        if signature.parameters[parameter].kind is inspect.Parameter.VAR_KEYWORD:
            given.update(value)
        else:
            given[parameter] = value
    try:
        canonical_json(given)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name}: an effect's arguments must be JSON values (str, int, float, bool, "
            f"None, Decimal, lists and dicts of them): {exc}"
        ) from exc
    return given


async def _in_own_thread(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a thread of its own, in this context. Not the loop's pool: the
    thread waits for the tool's coroutine, which may need that pool's threads (a sync
    tool, a nested effect), so a full pool would wait on itself for ever."""
    context = contextvars.copy_context()
    done: concurrent.futures.Future[T] = concurrent.futures.Future()

    def run() -> None:
        if not done.set_running_or_notify_cancel():
            return
        try:
            done.set_result(context.run(fn, *args))
        except BaseException as exc:  # handed to the awaiting coroutine, as to_thread does
            done.set_exception(exc)

    threading.Thread(target=run, name="waystone-effect", daemon=True).start()
    return await asyncio.wrap_future(done)


def _on_loop(loop: asyncio.AbstractEventLoop, awaitable: Awaitable[T]) -> T:
    """Run ``awaitable`` on ``loop`` from another thread and wait for it, in this thread's
    context (so the call's deadline reaches a client that sends it)."""
    context = contextvars.copy_context()
    done: concurrent.futures.Future[T] = concurrent.futures.Future()

    async def run() -> T:
        return await awaitable

    def finish(task: asyncio.Task[T]) -> None:
        if task.cancelled():
            done.cancel()
        elif (error := task.exception()) is not None:
            done.set_exception(error)
        else:
            done.set_result(task.result())

    def start() -> None:
        loop.create_task(run(), context=context).add_done_callback(finish)

    loop.call_soon_threadsafe(start)
    return done.result()
