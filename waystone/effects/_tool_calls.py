"""One tool call of a routed ``ToolNode`` through the effect ledger, keyed by the model's
tool call id (:mod:`waystone.effects._tool_node`).

A tool that declares nothing is called at most once: an error it raises is a known
outcome, recorded ``failed`` and raised on as it was; an idempotent one (MCP
``idempotentHint``) is made again under the same key after a crash or a transport error.
What the ledger keeps of a result (its message, or its ``Command``) is given back when the
node runs again.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

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
        """What the runner records for an error the call raised: a known outcome, failed,
        for a tool that declares nothing; for an idempotent one, a transport error is
        retried (or reconciled) under the key."""
        kind = classify_transport(exc) if self.dedupes else None
        if kind in (TransientError, UnknownOutcome):
            return kind(f"{self.name}: {type(exc).__name__}: {exc}")
        self.raised.append(exc)
        return PermanentError(f"{self.name} raised {type(exc).__name__}: {exc}")

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
                out = execute(self.request)
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
                out = await execute(self.request)
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
            content=(
                f"{self.name} was called for this tool call already and returned a "
                f"{receipt.get('type', 'result')}; it is not called again"
            ),
            name=self.name,
            tool_call_id=str(self.tool_call.get("id") or ""),
        )


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
