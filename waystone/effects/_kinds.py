"""How a tool called through LangGraph's ``ToolNode`` is made safe, from what it declares.

A pure decision over values: what :func:`~waystone.effects.lc_tools.durable_tool` put on
the tool, and the MCP annotations ``langchain-mcp-adapters`` copies into its metadata.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

DECLARED = "waystone_tool"  # the metadata key durable_tool(read_only=/effects_inside=) sets


class ToolKind(StrEnum):
    AT_MOST_ONCE = "at-most-once"  # declares nothing: ledger; unknown outcome -> needs-human
    IDEMPOTENT = "idempotent"  # MCP idempotentHint: ledger, made again with the same key
    READ_ONLY = "read-only"  # called again after a crash, retried on transient errors
    EFFECTS_INSIDE = "effects-inside"  # run again: its @effects reconcile by their own keys
    DURABLE = "durable"  # a durable_tool: it goes through the ledger itself


def tool_kind(metadata: Mapping[str, Any] | None, *, durable: bool = False) -> ToolKind:
    """The kind of a tool, ``durable`` when it is a :class:`DurableTool`.

    ===================================================  ==============
    the tool                                             kind
    ===================================================  ==============
    a durable_tool(..., idempotent_by_key=/lookup=)      durable
    durable_tool(..., read_only=True)                    read-only
    durable_tool(..., effects_inside=True)               effects-inside
    MCP ``readOnlyHint: true``                           read-only
    MCP ``idempotentHint: true``                         idempotent
    anything else                                        at-most-once
    ===================================================  ==============
    """
    if durable:
        return ToolKind.DURABLE
    found = metadata or {}
    declared = found.get(DECLARED)
    if declared in (ToolKind.READ_ONLY, ToolKind.EFFECTS_INSIDE):
        return ToolKind(declared)
    if found.get("readOnlyHint") is True:
        return ToolKind.READ_ONLY
    if found.get("idempotentHint") is True:
        return ToolKind.IDEMPOTENT
    return ToolKind.AT_MOST_ONCE
