"""The thread protocol over a WebSocket (``/threads/{t}/stream/events``): commands in and
their answers out, as over HTTP, plus ``subscription.subscribe`` / ``unsubscribe``; the
thread's events go out once each, to the socket, when a subscription wants them. A
subscription made after events went by gets those it wants of the last ``KEPT`` (the
SDK subscribes after ``run.start`` as often as before it), as the reference replays its
buffer."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections import OrderedDict, deque
from typing import TYPE_CHECKING, Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from waystone._json_input import parse_json_input
from waystone.errors import BadInput
from waystone.web import protocol_events
from waystone.web.protocol_events import Filter

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from waystone.web.thread_events import ThreadEvents

    Handle = Callable[[str, dict[str, Any], str | None], Awaitable[dict[str, Any]]]

KEPT = 10_000
_ids = itertools.count(1)


class Session:
    """One socket on one thread: its subscriptions, and the events it has seen and sent."""

    def __init__(
        self, websocket: WebSocket, thread_id: str, owner: str | None, handle: Handle
    ) -> None:
        self.websocket, self.thread_id, self.owner, self.handle = (
            websocket,
            thread_id,
            owner,
            handle,
        )
        self.subscriptions: dict[str, Filter] = {}
        self.seen: deque[dict[str, Any]] = deque(maxlen=KEPT)
        self.sent: OrderedDict[str, None] = OrderedDict()
        self.sending = asyncio.Lock()

    async def serve(self, events: ThreadEvents) -> None:
        """Until the socket closes."""
        pump = asyncio.create_task(self._pump(events))
        try:
            while True:
                payload = _parsed(await self.websocket.receive_text())
                if payload is None:
                    message = "Protocol commands must include an integer id and string method."
                    await self._send(_error(None, "invalid_argument", message))
                    continue
                await self._command(payload)
        except WebSocketDisconnect:
            pass
        finally:
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pump

    async def _command(self, payload: dict[str, Any]) -> None:
        method, params = payload["method"], payload.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "subscription.subscribe":
            if protocol_events.bad_channels(params.get("channels")):
                message = "subscription.subscribe received an unsupported channel."
                await self._send(_error(payload["id"], "invalid_argument", message))
                return
            sub_id, wanted = f"sub-{next(_ids)}", Filter.of(params)
            self.subscriptions[sub_id] = wanted
            missed = [e for e in list(self.seen) if wanted.matches(e)]
            result = {"subscription_id": sub_id, "replayed_events": len(missed)}
            await self._send(_success(payload["id"], result))
            for made in missed:
                await self._event(made)
        elif method == "subscription.unsubscribe":
            sub_id = str(params.get("subscription_id"))
            if self.subscriptions.pop(sub_id, None) is None:
                message = f"Unknown subscription: {sub_id}"
                await self._send(_error(payload["id"], "no_such_subscription", message))
            else:
                await self._send(_success(payload["id"], {}))
        else:
            await self._send(await self.handle(self.thread_id, payload, self.owner))

    async def _pump(self, events: ThreadEvents) -> None:
        async for made in events(self.thread_id):
            self.seen.append(made)
            if any(f.matches(made) for f in list(self.subscriptions.values())):
                await self._event(made)

    async def _event(self, made: dict[str, Any]) -> None:
        """``made``, unless this socket has sent it already."""
        if made["event_id"] in self.sent:
            return
        self.sent[made["event_id"]] = None
        if len(self.sent) > KEPT:
            self.sent.popitem(last=False)
        await self._send(made)

    async def _send(self, message: dict[str, Any]) -> None:
        async with self.sending:  # the pump and the commands share the socket
            await self.websocket.send_text(json.dumps(message, default=str))


def _parsed(text: str) -> dict[str, Any] | None:
    """A command, if ``text`` is one (a JSON object with an integer id and a method)."""
    try:
        payload = parse_json_input(text, "the command")
    except BadInput:
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("method"), str):
        return None
    given = payload.get("id")
    return payload if isinstance(given, int) and not isinstance(given, bool) else None


def _success(command_id: int, result: dict[str, Any]) -> dict[str, Any]:
    return {"type": "success", "id": command_id, "result": result, "meta": {}}


def _error(command_id: int | None, code: str, message: str) -> dict[str, Any]:
    return {"type": "error", "id": command_id, "error": code, "message": message}
