"""A ``create_react_agent`` graph driven by a fake tool-calling model: it calls a read-only
``lookup`` and a ``book`` tool that asks for approval with ``interrupt()``, in one step (two
``Send`` tasks to ``tools``), then answers. ``REACT_GRAPHS`` loads it in a test's processes."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.types import interrupt

from tests.support.chat_models import ConversationModel

REACT_GRAPHS = "trip=tests.support.react_graphs:trip_agent"
CALLS = [
    {"name": "lookup", "args": {"city": "Lyon"}, "id": "call_lookup"},
    {"name": "book", "args": {"city": "Lyon", "nights": 2}, "id": "call_book"},
]


@tool
def lookup(city: str) -> str:
    """The hotels of a city."""
    return f"hotels in {city}: Le Phare"


@tool
def book(city: str, nights: int) -> str:
    """Book a hotel, once a person approves."""
    answer = interrupt({"approve": f"book {nights} nights in {city}?"})
    if not isinstance(answer, dict) or answer.get("ok") is not True:
        return "not booked: refused"
    return f"booked {nights} nights in {city}"


def trip_agent() -> Any:
    model = ConversationModel(
        responses=[AIMessage(content="", tool_calls=CALLS), AIMessage(content="all set")]
    )
    import warnings

    from langgraph.prebuilt import create_react_agent
    from langgraph.warnings import LangGraphDeprecatedSinceV10

    with warnings.catch_warnings():  # LangGraph's own prebuilt agent, as the issue asks
        warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
        return create_react_agent(model, [lookup, book])
