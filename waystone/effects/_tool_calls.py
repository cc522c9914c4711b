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

import warnings
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

from langchain_core.load import dumpd, load
from langchain_core.messages import ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.types import Command, Send

from waystone.effects._keys import canonical_json
from waystone.effects._kinds import ToolKind
from waystone.effects._transport import classify_transport
from waystone.effects.context import call_site
from waystone.effects.inline import EffectSpec
from waystone.effects.tools import Receipt
from waystone.errors import PermanentError, TransientError, UnknownOutcome

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool
    from langgraph.prebuilt.tool_node import ToolCallRequest

Execute = Callable[["ToolCallRequest"], Any]
AExecute = Callable[["ToolCallRequest"], Awaitable[Any]]
TIMEOUT_S = 30.0  # the deadline an undeclared tool's call carries (only Waystone's http sends it)


class LedgeredCall:
    """A call through the ledger: at most once for a tool that declares nothing; made
    again under the same key for an idempotent one."""

    def __init__(self, request: ToolCallRequest, kind: ToolKind) -> None:
        self.request = request
        self.tool_call = request.tool_call
        self.name = str(self.tool_call["name"])
        self.dedupes = kind is ToolKind.IDEMPOTENT
        self.made: list[Any] = []  # what the tool returned, when it was called here
        self.raised: list[Exception] = []  # what it raised, when it was called here

    def _failed(self, exc: Exception) -> Exception:
        """What the runner records for an error the call raised: a transport error as what
        it means (retried or reconciled under the key); any other, a known failure."""
        kind = classify_transport(exc)
        if kind in (TransientError, UnknownOutcome):
            return kind(f"{self.name}: {type(exc).__name__}: {exc}")
        self.raised.append(exc)
        return PermanentError(f"{self.name} raised {type(exc).__name__}: {exc}")

    def _watched(self) -> ToolCallRequest:
        """The request with its tool watched for transport errors (see :class:`_Watched`)."""
        tool = self.request.tool
        if tool is None:
            return self.request
        watched = cast("BaseTool", _Watched(tool))  # ToolNode only invokes it, or reads it
        return self.request.override(tool=watched)

    def _spec(self, apply: Callable[[dict[str, Any]], Any]) -> EffectSpec:
        tool = self.request.tool
        return EffectSpec(
            name=self.name,
            description=str(getattr(tool, "description", "") or ""),
            apply=apply,
            idempotent_by_key=self.dedupes,
            timeout_s=TIMEOUT_S,
            receipt_of=receipt_of,
        )

    def call(self, execute: Execute) -> Any:
        def apply(given: dict[str, Any]) -> Any:
            try:
                out = execute(self._watched())
            except _Carried as carried:
                raise self._failed(carried.error) from carried.error
            except GraphBubbleUp:
                raise
            except Exception as exc:
                raise self._failed(exc) from exc
            self.made.append(out)
            return out

        site = call_site(self.name)
        if site is None:  # inside without_ledger()
            return execute(self.request)
        try:
            receipt = self._spec(apply).perform(site, self._args(), self._call_id())
        except PermanentError as exc:
            raise self._raised(exc) from exc.__cause__
        return self._answer(receipt)

    async def acall(self, execute: AExecute) -> Any:
        async def apply(given: dict[str, Any]) -> Any:
            try:
                out = await execute(self._watched())
            except _Carried as carried:
                raise self._failed(carried.error) from carried.error
            except GraphBubbleUp:
                raise
            except Exception as exc:
                raise self._failed(exc) from exc
            self.made.append(out)
            return out

        site = call_site(self.name)
        if site is None:
            return await execute(self.request)
        try:
            receipt = await self._spec(apply).aperform(site, self._args(), self._call_id())
        except PermanentError as exc:
            raise self._raised(exc) from exc.__cause__
        return self._answer(receipt)

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
        as it raised it here; else (a node run again) the ledger's."""
        return self.raised[0] if self.raised else failed

    def _answer(self, receipt: Receipt) -> Any:
        """What the tool returned when called here; else (a node run again) its message,
        as the ledger kept it."""
        if self.made:
            return self.made[0]
        command = receipt.get("command")
        if isinstance(command, dict):
            return _command_from(command)
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


class _Carried(GraphBubbleUp):
    """A transport error of a tool, carried through ``ToolNode``, which re-raises
    LangGraph's control-flow exceptions and may turn any other into a message for the
    model (``handle_tool_errors``): the ledger reads it for what it means instead."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def _carried(exc: Exception) -> Exception:
    kind = classify_transport(exc)
    return _Carried(exc) if kind in (TransientError, UnknownOutcome) else exc


class _Watched:
    """A tool as ``ToolNode`` invokes it, whose transport errors are :class:`_Carried`;
    anything else is the tool's."""

    def __init__(self, tool: BaseTool) -> None:
        self._tool = tool

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tool, name)

    def invoke(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self._tool.invoke(*args, **kwargs)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            raise _carried(exc) from exc.__cause__

    async def ainvoke(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await self._tool.ainvoke(*args, **kwargs)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            raise _carried(exc) from exc.__cause__


def receipt_of(name: str, output: Any) -> Receipt:
    """What the ledger keeps of a tool call's result: its message's content, status and
    artifact when they are JSON; a ``Command`` whose update and ``Send`` s are JSON or
    messages; else what it was."""
    del name
    if isinstance(output, ToolMessage):
        kept: dict[str, Any] = {"content": output.content, "status": output.status}
        if output.artifact is not None:
            kept["artifact"] = output.artifact
        for attempt in (kept, {k: v for k, v in kept.items() if k != "artifact"}):
            if _json(attempt):
                return {"message": attempt}
    if isinstance(output, Command) and output.resume is None:
        command = {
            "graph": output.graph,
            "update": dumpd(output.update),
            "goto": _goto(output.goto),
        }
        if _json(command) and _revivable(command):
            return {"command": command}
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


def _revivable(value: Any) -> bool:
    """Whether ``dumpd`` wrote no object it cannot make again (``not_implemented``)."""
    if isinstance(value, dict):
        if value.get("lc") == 1 and value.get("type") == "not_implemented":
            return False
        return all(map(_revivable, value.values()))
    if isinstance(value, list):
        return all(map(_revivable, value))
    return True


def _goto(goto: Any) -> Any:
    """A ``Command``'s ``goto`` as JSON: node names as they are, a ``Send`` as a dict."""
    if isinstance(goto, Send):
        return {"send": goto.node, "arg": dumpd(goto.arg)}
    if isinstance(goto, list | tuple):
        return [_goto(one) for one in goto]
    return goto


def _revived(value: Any) -> Any:
    with warnings.catch_warnings():  # langchain-core's load is marked beta
        warnings.simplefilter("ignore")
        return load(value, allowed_objects="messages")


def _goto_from(kept: Any) -> Any:
    if isinstance(kept, dict) and "send" in kept:
        return Send(kept["send"], _revived(kept["arg"]))
    if isinstance(kept, list):
        return [_goto_from(one) for one in kept]
    return kept


def _command_from(kept: dict[str, Any]) -> Command[Any]:
    """The ``Command`` :func:`receipt_of` kept."""
    return Command(
        graph=kept.get("graph"),
        update=_revived(kept.get("update")),
        goto=_goto_from(kept.get("goto") or ()),
    )
