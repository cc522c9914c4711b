"""Every tool call of LangGraph's ``ToolNode`` through the effect ledger, with nothing wrapped
by the user: what makes a brought graph safe by default.

:func:`route_tool_nodes` copies a compiled graph whose nodes (or subgraphs' nodes) are
``ToolNode`` s, each copy given a ``wrap_tool_call`` (inside the user's own, if any) that
routes a call by its tool's kind (:mod:`waystone.effects._kinds`). A tool that declares
nothing goes through the ledger at most once: its intent is committed before the call,
and after a crash with the intent open, the run goes to ``needs-human`` (the ledger's
reconciliation table), never a second call. What the tool raised is a known outcome (the
call returned an error): recorded ``failed``, never retried, and raised on to ``ToolNode``,
whose ``handle_tool_errors`` decides what the model sees, as without Waystone.

A ``needs-human`` (or a lost lease) is raised through ``ToolNode`` as a control-flow
exception, which it never turns into a message for the model, and out of the node as
itself: a model told "error" could call the tool again under a new call id.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from langchain_core.messages import ToolMessage
from langgraph.errors import GraphBubbleUp

from waystone.effects._keys import canonical_json
from waystone.effects._kinds import ToolKind, tool_kind
from waystone.effects._stop import Stop, routed
from waystone.effects._transport import classify_transport
from waystone.effects.context import call_site
from waystone.effects.inline import EffectSpec
from waystone.effects.lc_tools import DurableTool
from waystone.effects.tools import Receipt, RetryPolicy
from waystone.errors import PermanentError, TransientError, UnknownOutcome

if TYPE_CHECKING:
    from langgraph.prebuilt import ToolNode
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.pregel import Pregel

logger = logging.getLogger(__name__)

Execute = Callable[["ToolCallRequest"], Any]
AExecute = Callable[["ToolCallRequest"], Awaitable[Any]]
TIMEOUT_S = 30.0  # the deadline an undeclared tool's call carries (only Waystone's http sends it)
READ_AGAIN = RetryPolicy()  # a read-only tool's transient failures


def route_tool_nodes(graph: Pregel[Any, Any, Any, Any]) -> Pregel[Any, Any, Any, Any]:
    """``graph``, or a copy whose ``ToolNode`` s (its own and its subgraphs') route each tool
    call by its kind. The user's graph, nodes and tools are left as they are."""
    from langgraph.prebuilt import ToolNode
    from langgraph.pregel import Pregel

    changed = {}
    for name, node in graph.nodes.items():
        bound = node.bound
        if isinstance(bound, ToolNode):
            changed[name] = node.copy({"bound": _routed(bound)})
        elif isinstance(bound, Pregel):
            routed = route_tool_nodes(bound)
            if routed is not bound:  # LangGraph finds a node's subgraph by `subgraphs`
                changed[name] = node.copy({"bound": routed, "subgraphs": [routed]})
    if not changed:
        return graph
    return graph.copy(update={"nodes": {**graph.nodes, **changed}})


def _routed(node: ToolNode) -> ToolNode:
    """A copy of ``node`` whose tool calls go through :func:`call_tool`, inside the wrappers
    it has (a ``create_agent`` middleware's): they see what the model will see."""
    clone = copy.copy(node)
    theirs, atheirs = node._wrap_tool_call, node._awrap_tool_call

    def wrap(request: ToolCallRequest, execute: Execute) -> Any:
        if theirs is None:
            return call_tool(request, execute)
        return theirs(request, lambda req: call_tool(req, execute))

    async def awrap(request: ToolCallRequest, execute: AExecute) -> Any:
        if atheirs is None:
            return await acall_tool(request, execute)
        return await atheirs(request, lambda req: acall_tool(req, execute))

    clone._wrap_tool_call = wrap
    # a sync wrapper of theirs alone is what ToolNode runs for an async call: ours in it
    clone._awrap_tool_call = awrap if atheirs is not None or theirs is None else None
    clone.func = _unstopping(clone._func)  # bound to the copy, not to the user's node
    clone.afunc = _aunstopping(clone._afunc)
    return clone


def _unstopping(func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except Stop as stop:
            raise stop.error from None

    return run


def _aunstopping(func: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(func)
    async def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return await func(*args, **kwargs)
        except Stop as stop:
            raise stop.error from None

    return run


def _kind(request: ToolCallRequest) -> ToolKind | None:
    """The call's kind; ``None`` for a call to no tool of the node (ToolNode answers it)."""
    tool = request.tool
    if tool is None:
        return None
    return tool_kind(tool.metadata, durable=isinstance(tool, DurableTool))


def call_tool(request: ToolCallRequest, execute: Execute) -> Any:
    """One tool call of a routed ``ToolNode``, by its tool's kind."""
    kind = _kind(request)
    with routed():
        if kind is ToolKind.READ_ONLY:
            return _again(lambda: execute(request), request)
        if kind in (ToolKind.AT_MOST_ONCE, ToolKind.IDEMPOTENT):
            return _Ledgered(request, kind).call(execute)
        return execute(request)  # a durable tool's own ledger; effects inside; no tool


async def acall_tool(request: ToolCallRequest, execute: AExecute) -> Any:
    """:func:`call_tool` from a coroutine."""
    kind = _kind(request)
    with routed():
        if kind is ToolKind.READ_ONLY:
            return await _aagain(lambda: execute(request), request)
        if kind in (ToolKind.AT_MOST_ONCE, ToolKind.IDEMPOTENT):
            return await _Ledgered(request, kind).acall(execute)
        return await execute(request)


def _retry_after(error: Exception, attempt: int, request: ToolCallRequest) -> float | None:
    """Seconds to wait before calling a read-only tool again, ``None`` to raise ``error``."""
    kind = classify_transport(error)
    if kind not in (TransientError, UnknownOutcome) or attempt >= READ_AGAIN.max_attempts:
        return None
    logger.info(
        "read-only %s failed (%s), calling it again",
        request.tool_call["name"],
        error,
        extra={"attempt": attempt},
    )
    return READ_AGAIN.delay(attempt, random.random())


def _again(call: Callable[[], Any], request: ToolCallRequest) -> Any:
    attempt = 1
    while True:
        try:
            return call()
        except GraphBubbleUp:
            raise
        except Exception as exc:
            wait = _retry_after(exc, attempt, request)
            if wait is None:
                raise
        time.sleep(wait)
        attempt += 1


async def _aagain(call: Callable[[], Awaitable[Any]], request: ToolCallRequest) -> Any:
    attempt = 1
    while True:
        try:
            return await call()
        except GraphBubbleUp:
            raise
        except Exception as exc:
            wait = _retry_after(exc, attempt, request)
            if wait is None:
                raise
        await asyncio.sleep(wait)
        attempt += 1


class _Ledgered:
    """A call through the ledger, keyed by the model's tool call id: at most once for a
    tool that declares nothing; made again under the same key for an idempotent one."""

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
            receipt_of=_receipt,
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
        spec = self._spec(apply)
        if site is None:  # inside without_ledger()
            return execute(self.request)
        try:
            receipt = spec.perform(site, self._args(), self._call_id())
        except Exception as exc:
            raise self._answer_error(exc) from exc
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
        spec = self._spec(apply)
        if site is None:
            return await execute(self.request)
        try:
            receipt = await spec.aperform(site, self._args(), self._call_id())
        except Exception as exc:
            raise self._answer_error(exc) from exc
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

    def _answer_error(self, exc: Exception) -> Exception:
        """The error ``ToolNode`` gets: the tool's own, as it raised it here; else the
        ledger's (``failed``, ``needs-human``) as it is."""
        if isinstance(exc, PermanentError) and self.raised:
            return self.raised[0]
        return exc

    def _answer(self, receipt: Receipt) -> Any:
        """What the tool returned when called here; else (a node run again) its message,
        as the ledger kept it."""
        if self.made:
            return self.made[0]
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


def _receipt(name: str, output: Any) -> Receipt:
    """What the ledger keeps of a tool call's result: its message's content, status and
    artifact when they are JSON; else what it was (a ``Command`` is not kept)."""
    del name
    if isinstance(output, ToolMessage):
        kept: dict[str, Any] = {"content": output.content, "status": output.status}
        if output.artifact is not None:
            kept["artifact"] = output.artifact
        for attempt in (kept, {k: v for k, v in kept.items() if k != "artifact"}):
            try:
                canonical_json(attempt)
            except (TypeError, ValueError):
                continue
            return {"message": attempt}
    return {"kept": False, "type": type(output).__name__}
