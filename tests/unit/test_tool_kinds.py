"""What a tool called through ``ToolNode`` declares, and what the ledger keeps of its
result (docs/tools.md)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Command, Send

import waystone
from waystone._privacy.walk import string_mapper
from waystone._runtime.graphs import check_tools
from waystone.config import Settings
from waystone.effects._kinds import DECLARED, ToolKind, tool_kind
from waystone.effects._tool_calls import _command_from, receipt_of
from waystone.errors import BadInput


def mcp(**hints: Any) -> dict[str, Any]:
    """Metadata as ``langchain-mcp-adapters`` sets it: ``ToolAnnotations.model_dump()``."""
    annotations = {"title": None, "readOnlyHint": None, "destructiveHint": None}
    return annotations | {"idempotentHint": None, "openWorldHint": None, **hints}


@pytest.mark.parametrize(
    ("metadata", "durable", "kind"),
    [
        (None, False, ToolKind.AT_MOST_ONCE),
        ({}, False, ToolKind.AT_MOST_ONCE),
        ({"owner": "ops"}, False, ToolKind.AT_MOST_ONCE),
        (None, True, ToolKind.DURABLE),
        ({DECLARED: "read-only"}, True, ToolKind.DURABLE),
        ({DECLARED: "read-only"}, False, ToolKind.READ_ONLY),
        ({DECLARED: "effects-inside"}, False, ToolKind.EFFECTS_INSIDE),
        ({DECLARED: "something else"}, False, ToolKind.AT_MOST_ONCE),
        (mcp(), False, ToolKind.AT_MOST_ONCE),
        (mcp(readOnlyHint=True), False, ToolKind.READ_ONLY),
        (mcp(readOnlyHint=True, idempotentHint=True), False, ToolKind.READ_ONLY),
        (mcp(idempotentHint=True, destructiveHint=True), False, ToolKind.IDEMPOTENT),
        (mcp(readOnlyHint=False, destructiveHint=False), False, ToolKind.AT_MOST_ONCE),
        (mcp(readOnlyHint="yes"), False, ToolKind.AT_MOST_ONCE),  # only a true bool counts
    ],
)
def test_a_tools_kind(metadata: dict[str, Any] | None, durable: bool, kind: ToolKind) -> None:
    assert tool_kind(metadata, durable=durable) is kind


@tool
def look(order_id: str) -> str:
    """Look an order up."""
    return order_id


def test_durable_tool_declares_a_kind_on_a_copy() -> None:
    read_only = waystone.durable_tool(look, read_only=True)
    inside = waystone.durable_tool(look, effects_inside=True)
    assert tool_kind(read_only.metadata) is ToolKind.READ_ONLY
    assert tool_kind(inside.metadata) is ToolKind.EFFECTS_INSIDE
    assert look.metadata is None
    assert read_only.invoke({"order_id": "7"}) == "7"  # called as it is


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"read_only": True, "effects_inside": True}, "not both"),
        ({"read_only": True, "idempotent_by_key": True}, "for a tool that is"),
        ({"effects_inside": True, "lookup": lambda key: None}, "for a tool that is"),
    ],
)
def test_a_kind_is_declared_alone(options: dict[str, Any], says: str) -> None:
    with pytest.raises(TypeError, match=says):
        waystone.durable_tool(look, **options)


def test_a_durable_tool_is_not_declared_again() -> None:
    durable = waystone.durable_tool(look, idempotent_by_key=True)
    with pytest.raises(TypeError, match="durable tool already"):
        waystone.durable_tool(durable, read_only=True)


def test_the_ledger_keeps_a_results_message() -> None:
    said = ToolMessage(content="booked", tool_call_id="c1", status="success")
    assert receipt_of("book", said) == {"message": {"content": "booked", "status": "success"}}
    shown = ToolMessage(
        content=[{"type": "text", "text": "x"}], artifact={"n": 1}, tool_call_id="c"
    )
    kept = {"content": [{"type": "text", "text": "x"}], "status": "success", "artifact": {"n": 1}}
    assert receipt_of("t", shown) == {"message": kept}


def test_what_the_ledger_cannot_keep_is_named() -> None:
    odd = ToolMessage(content="ok", artifact=object(), tool_call_id="c1")
    assert receipt_of("t", odd) == {"message": {"content": "ok", "status": "success"}}
    assert receipt_of("t", Command(resume="yes")) == {"kept": False, "type": "Command"}
    assert receipt_of("t", 42) == {"kept": False, "type": "int"}
    unkept = receipt_of("t", Command(update={"x": object()}), JsonPlusSerializer())
    assert (unkept["kept"], unkept["type"]) == (False, "Command")
    assert "the saver's serializer cannot keep it" in unkept["why"]
    assert receipt_of("t", Command(update={"n": 1}))["why"] == "no saver's serializer in the task"


def test_a_command_is_kept_and_given_back_as_it_was() -> None:
    said = ToolMessage(content="handed off", tool_call_id="c1", name="handoff")
    command = Command(
        graph=Command.PARENT,
        update={"messages": [said], "n": 1},
        goto=[Send("helper", {"task": "x", "messages": [said]}), "agent"],
    )
    serde = JsonPlusSerializer(allowed_msgpack_modules=None)  # LangGraph's strict allowlist
    kept = receipt_of("handoff", command, serde)
    assert json.loads(json.dumps(kept)) == kept  # what the ledger stores
    assert _command_from(kept["command"], serde) == command
    assert _command_from(kept["command"], None) is None


def test_a_command_is_kept_as_the_state_it_updates_is_redacted() -> None:
    serde = JsonPlusSerializer()
    command = Command(update={"found": [Document(page_content="mail ana@example.com")]})
    kept = receipt_of("search", command, serde, redact=lambda v: _replaced(v, "ana@", "<pii>"))
    assert "ana@" not in base64.b64decode(kept["command"]["data"]).decode("latin-1")
    back = _command_from(kept["command"], serde)
    assert back is not None
    assert back.update == {"found": [Document(page_content="mail <pii>example.com")]}


def _replaced(value: Any, old: str, new: str) -> Any:
    return string_mapper(lambda text: text.replace(old, new))(value)


def test_the_tools_mode_is_one_of_two() -> None:
    assert check_tools("ledger") == "ledger"
    assert check_tools("as-is") == "as-is"
    with pytest.raises(BadInput, match="'as-is'"):
        check_tools("off")


def test_the_edge_reads_the_tools_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WAYSTONE_TOOLS", "as-is")
    assert Settings.from_env().tools == "as-is"
    monkeypatch.delenv("WAYSTONE_TOOLS")
    assert Settings.from_env().tools == "ledger"
    monkeypatch.setenv("WAYSTONE_TOOLS", "off")
    with pytest.raises(ValueError, match="WAYSTONE_TOOLS='off'"):
        Settings.from_env()
