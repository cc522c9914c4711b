"""Effects in a user's own graph, across real processes: LangGraph's prebuilt ReAct agent
killed with SIGKILL at every crash point of a durable tool's effect path, and a node that
makes an effect before ``interrupt()``, resumed from another process. Each effect shows
once in the provider's own records (``GET /_ledger``)."""

from __future__ import annotations

import json

import psycopg
import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.types import Command

from tests.conftest import Cli
from tests.support.crashes import crash_points
from tests.support.effect_graphs import GRAPHS, interrupting_on_stock
from tests.support.outputs import ok
from tests.support.rows import effects
from waystone.examples.provider import ProviderProcess

TOOLS = ("refund", "notify")
# The points a call of a durable tool (or an effect) in a user's node passes, its
# read-back's, and the run's own; the others are in the agent preset's nodes.
ON_THE_EFFECT_PATH = {
    "execute:after-intent",
    "effect:before-send",
    "execute:after-transient",
    "execute:after-apply",
    "execute:after-receipt",
    "confirm:after-lookup",
    "confirm:after-record",
    "run:after-checkpoint",
}
PRESET_ONLY = {"propose:after-model", "authorize:after-decision", "verify:after-checks"}
# a webhook delivery's, after its run has stopped: tests/acceptance/test_api_webhooks.py
WEBHOOK_ONLY = {"webhook:before-send", "webhook:after-send"}
POINTS = crash_points()
CASES = [
    pytest.param(f"{p['name']}@{tool}" if tool else p["name"], id=f"{p['name']}@{tool or 'any'}")
    for p in POINTS
    if p["name"] in ON_THE_EFFECT_PATH
    for tool in (TOOLS if p["per_tool"] else (None,))
]
ASKED = {"order_id": "1001", "amount": "12.00", "to": "ana@example.com"}


@pytest.fixture
def graph_cli(cli: Cli) -> Cli:
    cli.env["WAYSTONE_GRAPHS"] = GRAPHS
    return cli


def test_every_crash_point_is_on_the_effect_path_or_the_presets() -> None:
    """A new crash point is looped over below, or said to be the preset's or a webhook's."""
    listed = {p["name"] for p in POINTS}
    assert listed == ON_THE_EFFECT_PATH | PRESET_ONLY | WEBHOOK_ONLY
    assert not ON_THE_EFFECT_PATH & PRESET_ONLY


# the issue asks for LangGraph's own prebuilt agent, deprecated in favour of langchain's
@pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecatedSinceV10")
@pytest.mark.parametrize("armed", CASES)
def test_a_react_agent_killed_at_a_crash_point_makes_each_effect_once(
    armed: str, graph_cli: Cli, provider: ProviderProcess, database_url: str
) -> None:
    """``create_react_agent``'s model calls ``refund`` and ``notify`` in one turn, each
    read back once applied; the process driving it SIGKILLs itself at ``armed``, and
    ``waystone run`` from a new process finishes the run. ``refund`` is made again under
    its key after a crash (the provider deduplicates it); ``notify`` is looked up by its
    key and sent again only once its last call's deadline has passed (the provider
    refuses a request past it), so it never ends ``needs-human`` here. Each endpoint
    also fails once with a 503, so each effect goes through a recorded retry too."""
    provider.inject("refunds", "transient", times=1)
    provider.inject("notifications", "transient", times=1)
    said = {"messages": [{"role": "user", "content": json.dumps(ASKED)}]}
    started = ok(graph_cli("start", "--graph", "react", "--input", json.dumps(said), "--json"))
    thread_id = started["thread_id"]

    killed = graph_cli("run", thread_id, "--json", env={"WAYSTONE_CRASH_AT": armed})
    assert killed.returncode == -9, f"{armed} was never reached: {killed.stdout}{killed.stderr}"
    last = ok(graph_cli("run", thread_id, "--json"))
    assert last["state"] == "done", last

    made = provider.ledger()
    assert [(r["order_id"], r["amount"]) for r in made["refunds"]] == [("1001", "12.00")]
    assert [n["to"] for n in made["notifications"]] == ["ana@example.com"]
    with psycopg.connect(database_url) as conn:
        made_effects = effects(conn, thread_id, "tool", "status", "key", order="tool")
    assert made_effects == [
        ("notify", "confirmed", made["notifications"][0]["client_ref"]),
        ("refund", "confirmed", made["refunds"][0]["idempotency_key"]),
    ]


def test_an_effect_before_an_interrupt_is_made_once_and_twice_on_the_stock_saver(
    graph_cli: Cli, provider: ProviderProcess, empty_database_url: str
) -> None:
    """The node sends a notification, then calls ``interrupt()``; answered from another
    process, LangGraph runs the node's code again from its start. Through Waystone the
    ledger gives the first call's receipt back; on the stock ``PostgresSaver`` the same
    graph, calling the provider directly, tells the customer twice."""
    started = ok(
        graph_cli(
            "start", "--graph", "interrupting", "--input", '{"to": "ana@example.com"}', "--json"
        )
    )
    thread_id = started["thread_id"]
    waiting = ok(graph_cli("run", thread_id, "--json"))
    assert [i["value"] for i in waiting["interrupts"]] == [{"ask": "was the customer told?"}]
    sent = provider.ledger()["notifications"]
    assert [n["to"] for n in sent] == ["ana@example.com"]

    done = ok(graph_cli("resume", thread_id, "--value", '"yes"', "--run", "--json"))
    assert done["state"] == "done", done
    assert provider.ledger()["notifications"] == sent  # not sent again

    with PostgresSaver.from_conn_string(empty_database_url) as stock:
        stock.setup()
        graph = interrupting_on_stock(provider.url, key="stock").compile(checkpointer=stock)
        config: RunnableConfig = {"configurable": {"thread_id": "stock-1"}}
        graph.invoke({"to": "bo@example.com"}, config, durability="sync")
        state = graph.invoke(Command(resume="yes"), config, durability="sync")
    assert state["answer"] == "yes"
    twice = [n["to"] for n in provider.ledger()["notifications"] if n["client_ref"] == "stock"]
    assert twice == ["bo@example.com", "bo@example.com"]


@pytest.mark.parametrize("armed", ["execute:after-apply", "execute:after-receipt"])
def test_an_effect_in_the_graphs_first_node_is_made_once_across_a_crash(
    armed: str, graph_cli: Cli, provider: ProviderProcess
) -> None:
    """The effect's key derives from its task, and the task from the checkpoint its step
    began from: a new run's first checkpoints, held to commit with its first node's,
    are committed before that node's first effect, so the run killed after the provider
    applied it resumes from the same checkpoint, with the same key, and finds it."""
    started = ok(
        graph_cli(
            "start", "--graph", "interrupting", "--input", '{"to": "ana@example.com"}', "--json"
        )
    )
    thread_id = started["thread_id"]
    killed = graph_cli("run", thread_id, "--json", env={"WAYSTONE_CRASH_AT": armed})
    assert killed.returncode == -9, f"{armed} was never reached: {killed.stdout}{killed.stderr}"
    waiting = ok(graph_cli("run", thread_id, "--json"))
    assert waiting["state"] == "waiting", waiting
    assert [n["to"] for n in provider.ledger()["notifications"]] == ["ana@example.com"]
