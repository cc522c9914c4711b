"""One tool call of a routed ``ToolNode`` through the effect ledger, keyed by the model's
tool call id (:mod:`waystone.effects._tool_node`).

A tool that declares nothing is called at most once; an idempotent one (MCP
``idempotentHint``) is made again under the same key after a crash. For either, a
transport error is read for what it means (:mod:`waystone.effects._transport`): nothing
sent, retried under the key; maybe landed (a read timeout), an unknown outcome, reconciled
(for an at-most-once tool: ``needs-human``, never a second call, never an error shown to
the model); any other error is a known outcome, recorded ``failed`` and raised on as it was.
What the ledger keeps of a result (its message, or its ``Command``) is given back when the
node runs again.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from langchain_core.messages import ToolMessage
from langgraph._internal._constants import CONFIG_KEY_CHECKPOINTER
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.errors import GraphBubbleUp
from langgraph.types import Command

from waystone.effects._interrupts import pauses
from waystone.effects._keys import canonical_json
from waystone.effects._kinds import ToolKind
from waystone.effects._proxy import tool_through
from waystone.effects._transport import classify_transport
from waystone.effects.context import CallSite, call_site
from waystone.effects.inline import EffectSpec
from waystone.effects.tools import Receipt
from waystone.errors import PermanentError, TransientError, UnknownOutcome

if TYPE_CHECKING:
    from langgraph.prebuilt.tool_node import ToolCallRequest

Execute = Callable[["ToolCallRequest"], Any]
AExecute = Callable[["ToolCallRequest"], Awaitable[Any]]
TIMEOUT_S = 30.0  # the deadline an undeclared tool's call carries (only Waystone's http sends it)
# what tools raised under a routed node's run, by tool call id: a wrapper of the user's
# that calls again gets the tool's own error back, not the ledger's
_RAISED: ContextVar[dict[str, Exception] | None] = ContextVar("waystone_tool_raised", default=None)


@contextmanager
def errors_kept() -> Iterator[None]:
    """Inside: an error a tool raised is given again to a second call of its tool call
    (the tool calls the node starts share the record)."""
    token = _RAISED.set({})
    try:
        yield
    finally:
        _RAISED.reset(token)


class LedgeredCall:
    """A call through the ledger: at most once for a tool that declares nothing; made
    again under the same key for an idempotent one."""

    def __init__(self, request: ToolCallRequest, kind: ToolKind) -> None:
        self.request = request
        self.tool_call = request.tool_call
        self.name = str(self.tool_call["name"])
        self.dedupes = kind is ToolKind.IDEMPOTENT
        self.serde = task_serde(request)
        self.made: list[Any] = []  # what the tool returned, when it was called here
        self.raised: list[Exception] = []  # what it raised, when it was called here

    def _failed(self, exc: Exception) -> Exception:
        """What the runner records for an error the call raised: a transport error as what
        it means (retried or reconciled under the key); any other, a known failure."""
        kind = classify_transport(exc)
        if kind in (TransientError, UnknownOutcome):
            return kind(f"{self.name}: {type(exc).__name__}: {exc}")
        self.raised.append(exc)
        kept, call_id = _RAISED.get(), self._call_id()
        if kept is not None and call_id is not None:
            kept[call_id] = exc
        return PermanentError(f"{self.name} raised {type(exc).__name__}: {exc}")

    def _spec(self, apply: Callable[[dict[str, Any]], Any], site: CallSite) -> EffectSpec:
        tool = self.request.tool
        serde, redact = self.serde, site.context.redact
        return EffectSpec(
            name=self.name,
            description=str(getattr(tool, "description", "") or ""),
            apply=apply,
            idempotent_by_key=self.dedupes,
            timeout_s=TIMEOUT_S,
            receipt_of=lambda name, output: receipt_of(name, output, serde, redact),
        )

    def call(self, execute: Execute) -> Any:
        def apply(given: dict[str, Any]) -> Any:
            try:
                out = execute(self._escaping())
            except Escaped as escaped:
                raise self._failed(escaped.error) from escaped.error
            except Exception as exc:
                if pauses(exc):  # interrupt(): the ledger's runner records it
                    raise
                raise self._failed(exc) from exc
            self.made.append(out)
            return out

        site = call_site(self.name)
        if site is None:  # inside without_ledger()
            return execute(self.request)
        try:
            receipt = self._spec(apply, site).perform(site, self._args(), self._call_id())
        except PermanentError as exc:
            raise self._raised(exc) from exc.__cause__
        return self._answer(receipt)

    async def acall(self, execute: AExecute) -> Any:
        async def apply(given: dict[str, Any]) -> Any:
            try:
                out = await execute(self._escaping())
            except Escaped as escaped:
                raise self._failed(escaped.error) from escaped.error
            except Exception as exc:
                if pauses(exc):  # interrupt(): the ledger's runner records it
                    raise
                raise self._failed(exc) from exc
            self.made.append(out)
            return out

        site = call_site(self.name)
        if site is None:
            return await execute(self.request)
        try:
            receipt = await self._spec(apply, site).aperform(site, self._args(), self._call_id())
        except PermanentError as exc:
            raise self._raised(exc) from exc.__cause__
        return self._answer(receipt)

    def _escaping(self) -> ToolCallRequest:
        """The request, its tool's transport errors let out past ``ToolNode``'s error
        handling (which would make them a message) to be classified here."""
        if self.request.tool is None:
            return self.request
        return self.request.override(
            tool=tool_through(self.request.tool, _escape, _aescape, self.request)
        )

    def _args(self) -> dict[str, Any]:
        args = dict(self.tool_call.get("args") or {})
        try:
            canonical_json(args)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{self.name}: a tool call's arguments must be JSON: {exc}") from exc
        return args

    def _call_id(self) -> str | None:
        found = self.tool_call.get("id")
        return str(found) if found else None

    def _raised(self, failed: PermanentError) -> Exception:
        """The error ``ToolNode`` gets for a call the ledger says failed: the tool's own,
        as it raised it here or in an earlier call of this node's run; else (a node run
        again) the ledger's."""
        if self.raised:
            return self.raised[0]
        kept, call_id = _RAISED.get() or {}, self._call_id()
        return kept.get(call_id, failed) if call_id is not None else failed

    def _answer(self, receipt: Receipt) -> Any:
        """What the tool returned when called here; else (a node run again) its message,
        as the ledger kept it."""
        if self.made:
            return self.made[0]
        kept_command = receipt.get("command")
        if isinstance(kept_command, dict) and (command := _command_from(kept_command, self.serde)):
            return command
        kept = receipt.get("message")
        if isinstance(kept, dict):
            return ToolMessage(
                content=kept.get("content", ""),
                status=kept.get("status", "success"),
                artifact=kept.get("artifact"),
                name=self.name,
                tool_call_id=str(self.tool_call.get("id") or ""),
            )
        return ToolMessage(
            content=answer_of(self.name, receipt),
            name=self.name,
            tool_call_id=str(self.tool_call.get("id") or ""),
        )


def answer_of(name: str, receipt: Receipt) -> str:
    """What the model is told of a call made already whose receipt keeps no message: who
    recorded it made, for one a person settled; the provider's receipt, for one given;
    else what the tool returned, by type."""
    if "settled_by" in receipt:
        return f"{name} was made, as recorded by {receipt['settled_by']}: {receipt.get('reason')}"
    if receipt.get("kept") is False:
        return (
            f"{name} was called for this tool call already and returned a "
            f"{receipt.get('type', 'result')}; it is not called again"
        )
    return f"{name} was made for this tool call; the provider shows: {canonical_json(receipt)}"


class Escaped(GraphBubbleUp):
    """A tool's transport error, carried through ``ToolNode`` unchanged."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def _escape(call: Callable[[], Any], request: ToolCallRequest) -> Any:
    del request
    try:
        return call()
    except GraphBubbleUp:
        raise
    except Exception as exc:
        if classify_transport(exc) is None:
            raise
        raise Escaped(exc) from exc


async def _aescape(call: Callable[[], Awaitable[Any]], request: ToolCallRequest) -> Any:
    del request
    try:
        return await call()
    except GraphBubbleUp:
        raise
    except Exception as exc:
        if classify_transport(exc) is None:
            raise
        raise Escaped(exc) from exc


def receipt_of(
    name: str,
    output: Any,
    serde: SerializerProtocol | None = None,
    redact: Callable[[Any], Any] = lambda value: value,
) -> Receipt:
    """What the ledger keeps of a tool call's result: its message's content, status and
    artifact when they are JSON; a ``Command`` as the saver's ``serde`` stores the state it
    updates (redacted and sealed as a checkpoint is); else what it was, and why."""
    del name
    if isinstance(output, ToolMessage):
        kept: dict[str, Any] = {"content": output.content, "status": output.status}
        if output.artifact is not None:
            kept["artifact"] = output.artifact
        for attempt in (kept, {k: v for k, v in kept.items() if k != "artifact"}):
            if _json(attempt):
                return {"message": attempt}
    if isinstance(output, Command) and output.resume is None:
        if serde is None:
            return {"kept": False, "type": "Command", "why": "no saver's serializer in the task"}
        try:
            kind, data = serde.dumps_typed(redact(output))
            serde.loads_typed((kind, data))  # what cannot come back is said now, not on replay
        except Exception as exc:
            why = f"the saver's serializer cannot keep it: {type(exc).__name__}: {exc}"
            return {"kept": False, "type": "Command", "why": why}
        return {"command": {"type": kind, "data": base64.b64encode(data).decode("ascii")}}
    return {"kept": False, "type": type(output).__name__}


def kept_content(receipt: Receipt | None) -> Any:
    """The content of the message :func:`receipt_of` kept, ``None`` when it kept none."""
    kept = (receipt or {}).get("message")
    return kept.get("content") if isinstance(kept, dict) else None


def _json(value: Any) -> bool:
    try:
        canonical_json(value)
    except (TypeError, ValueError):
        return False
    return True


def task_serde(request: ToolCallRequest) -> SerializerProtocol | None:
    """The serializer of the saver the call's task checkpoints with (a strict graph's
    widened one included); ``None`` outside a task."""
    config = getattr(request.runtime, "config", None) or {}
    saver = (config.get("configurable") or {}).get(CONFIG_KEY_CHECKPOINTER)
    serde: SerializerProtocol | None = getattr(saver, "serde", None)
    return serde


def _command_from(kept: dict[str, Any], serde: SerializerProtocol | None) -> Command[Any] | None:
    """The ``Command`` :func:`receipt_of` kept; ``None`` without the serializer it needs."""
    if serde is None:
        return None
    command = serde.loads_typed((str(kept["type"]), base64.b64decode(kept["data"])))
    return command if isinstance(command, Command) else None
