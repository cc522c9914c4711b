"""The assistants as MCP tools, through the official ``mcp`` client against a real
``waystone api`` and worker: the tools are listed with their graphs' input schemas, a call
is an ordinary Waystone run (in ``history``), and a caller without the token is refused.
The docs' example runs as written."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import Cli
from tests.support.api import ApiSetup
from tests.support.blocks import block

pytestmark = pytest.mark.slow

GRAPH = "steps=tests.support.option_graphs:two_steps"


@pytest.fixture
def api_setup() -> ApiSetup:
    return ApiSetup({"WAYSTONE_GRAPHS": GRAPH}, worker=())


async def _session(url: str, token: str, work: Any) -> Any:
    headers = {"x-api-key": token}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
    ):
        return await work(client)


def test_the_client_lists_the_assistants_and_a_call_is_a_run(
    api: str, api_setup: ApiSetup, cli: Cli
) -> None:
    async def work(client: Client) -> Any:
        tools = await client.list_tools()
        called = await client.call_tool("steps", {"text": "hi"})
        return tools, called

    tools, called = asyncio.run(_session(api, api_setup.token, work))
    listed = {t.name: t for t in tools.tools}
    assert "steps" in listed
    assert listed["steps"].input_schema["type"] == "object"
    assert not called.is_error, called.content
    output = json.loads(called.content[0].text)
    assert output["log"] == ["first: hi as none", "second: tone none"]
    thread_id = called.meta["waystone/thread_id"]
    history = json.loads(cli("history", thread_id, "--json").stdout)
    assert [r["state"] for r in history["runs"]] == ["done"]


def test_a_caller_without_the_token_is_refused(api: str) -> None:
    answer = httpx.post(
        f"{api}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"accept": "application/json, text/event-stream"},
    )
    assert answer.status_code == 401, answer.text


def test_the_docs_example_lists_and_calls(
    api: str, api_setup: ApiSetup, capsys: pytest.CaptureFixture[str]
) -> None:
    scope: dict[str, Any] = {}
    exec(compile(block("docs/api.md", "MCP", "python").code, "docs/api.md", "exec"), scope)
    asyncio.run(scope["call"](api, api_setup.token, "steps", {"text": "hi"}))
    printed = capsys.readouterr().out
    assert "name='steps'" in printed
    assert "first: hi as none" in printed
