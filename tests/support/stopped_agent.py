"""A ``create_react_agent`` whose booking tool calls a provider on loopback that holds
each booking until the test lets it go: a run can be stopped while its tool call is in
flight, on a condition the test controls.

``BookingDesk`` is the provider (in the test's process): it records every request and
answers a booking only once :meth:`BookingDesk.release` is called. The agents read its URL
from ``WAYSTONE_TEST_BOOKING_URL``, so a worker in another process calls the same desk.
``WAYSTONE_GRAPHS=react=tests.support.stopped_agent:react_agent`` loads the agent.
"""

from __future__ import annotations

import json
import os
import threading
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, tool

import waystone
from tests.support.chat_models import ConversationModel

URL_VARIABLE = "WAYSTONE_TEST_BOOKING_URL"
HOLD_LIMIT_S = 120.0  # a booking never released is answered after this long
ANSWER = "Your trip is sorted."


class BookingDesk:
    """The provider: ``POST /book`` books (held until released), ``GET /bookings`` lists."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.bookings: list[dict[str, Any]] = []
        self._released = threading.Event()
        self._lock = threading.Lock()
        desk = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with desk._lock:
                    desk.requests.append(body)
                desk._released.wait(HOLD_LIMIT_S)
                with desk._lock:
                    booking = {"id": f"bk-{len(desk.bookings) + 1}", **body}
                    desk.bookings.append(booking)
                self._answer(booking)

            def do_GET(self) -> None:
                with desk._lock:
                    self._answer({"bookings": list(desk.bookings)})

            def _answer(self, value: Any) -> None:
                data = json.dumps(value).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                del format, args

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def release(self) -> None:
        """Answer the bookings held, and every one after."""
        self._released.set()

    def held(self) -> int:
        with self._lock:
            return len(self.requests) - len(self.bookings)


@contextmanager
def booking_desk() -> Iterator[BookingDesk]:
    desk = BookingDesk()
    serving = threading.Thread(target=desk._server.serve_forever, daemon=True)
    serving.start()
    try:
        yield desk
    finally:
        desk.release()
        desk._server.shutdown()
        desk._server.server_close()


def _book(city: str) -> dict[str, Any]:
    found: dict[str, Any] = (
        httpx.post(f"{os.environ[URL_VARIABLE]}/book", json={"city": city}, timeout=HOLD_LIMIT_S)
        .raise_for_status()
        .json()
    )
    return found


@tool
def book(city: str) -> dict[str, Any]:
    """Book a trip to a city."""
    return _book(city)


def model(tools: Sequence[str] = ("book",)) -> ConversationModel:
    """Asks for a call of each of ``tools`` in one message (the first one's id is
    ``call_book``); answers once a tool message (any) is in the conversation."""
    calls = [
        {"name": name, "args": {"city": "Lisbon"}, "id": f"call_{'book' if i == 0 else name}"}
        for i, name in enumerate(tools)
    ]
    return ConversationModel(responses=[AIMessage("", tool_calls=calls), AIMessage(ANSWER)])


def agent(tools: list[BaseTool], version: str = "v2") -> Any:
    from langgraph.prebuilt import create_react_agent
    from langgraph.warnings import LangGraphDeprecatedSinceV10

    with warnings.catch_warnings():  # LangGraph's own prebuilt agent, as the issue asks
        warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
        return create_react_agent(model([t.name for t in tools]), tools, version=version)


def react_agent() -> Any:
    """The agent with the tool as it is (Send-based tool calls: ``version="v2"``)."""
    return agent([book])


def react_agent_v1() -> Any:
    """The same, its tool calls run by one ``tools`` task (``version="v1"``)."""
    return agent([book], version="v1")


def durable_react_agent() -> Any:
    """The agent with the booking made through the effect ledger."""
    return agent([waystone.durable_tool(book, idempotent_by_key=True)])
