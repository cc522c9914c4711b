"""A user's own LangGraph graph run durably: its interrupts, its values, its many runs."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from tests.conftest import Cli
from tests.support.chat import say
from tests.support.graphs import (
    GRAPHS,
    ask_graph,
    breakpoint_graph,
    broken_builder,
    chat_graph,
    fan_graph,
    functional_workflow,
    look_alike_graph,
    refund_graph,
    two_questions_graph,
)
from tests.support.inside import parts
from tests.support.outputs import ok
from tests.support.rows import effects
from waystone import Runtime, Settings
from waystone.cli.agents import default_agents
from waystone.errors import BadInput, LeaseLost, TransitionNotAllowed
from waystone.examples.provider import ProviderProcess


@pytest.fixture
def rt_graphs() -> dict[str, Any]:
    return {
        "ask": ask_graph(),
        "two": two_questions_graph,
        "chat": chat_graph,
        "fan": fan_graph,
        "flow": functional_workflow(),
        "alike": look_alike_graph,
        "pay": refund_graph,
    }


def test_a_graphs_interrupt_is_shown_and_answered_with_resume(rt: Runtime) -> None:
    waiting = rt.invoke("ask", {"question": "which colour?"})
    assert (waiting.state, waiting.waiting_for, waiting.step) == ("waiting", "resume", "ask")
    [pending] = waiting.interrupts
    assert pending["value"] == {"question": "which colour?"}
    assert rt.status(waiting.thread_id).interrupts == [pending]

    assert rt.answered_interrupts(waiting.thread_id) == {}
    answered = rt.resume(waiting.thread_id, "blue", by="ana")
    assert answered.state == "waiting"  # a worker (or run) goes on with it
    assert rt.answered_interrupts(waiting.thread_id) == {pending["id"]: "ana"}
    done = rt.run(waiting.thread_id)
    assert (done.state, done.interrupts) == ("done", [])
    assert rt.answered_interrupts(waiting.thread_id) == {}  # the run took the answer
    values = rt.graph("ask").get_state(rt.config(waiting.thread_id)).values
    assert values == {"question": "which colour?", "answer": "blue", "steps": ["draft", "ask"]}
    kinds = [e["kind"] for e in rt.history(waiting.thread_id)["events"]]
    assert "resume" in kinds


def test_the_dashboard_lists_a_graphs_pending_interrupts(rt: Runtime) -> None:
    from waystone._runs.dashboard import snapshot

    waiting = rt.invoke("ask", {"question": "which colour?"})
    data = snapshot(rt)
    [row] = data["pending_interrupts"]
    assert (row["thread_id"], row["agent"]) == (waiting.thread_id, "ask")
    assert row["interrupts"] == waiting.interrupts
    assert data["pending_signals"] == []
    assert [s.thread_id for s in rt.list(state="waiting")] == [waiting.thread_id]
    assert rt.list(state="waiting")[0].interrupts == waiting.interrupts


def test_a_functional_api_workflow_runs_durably(rt: Runtime) -> None:
    waiting = rt.invoke("flow", "hello")
    assert [i["value"] for i in waiting.interrupts] == [{"approve": "HELLO"}]
    rt.resume(waiting.thread_id, "ok")
    done = rt.run(waiting.thread_id)
    assert done.state == "done"
    values = rt.graph("flow").get_state(rt.config(waiting.thread_id)).values
    assert values == {"loud": "HELLO", "answer": "ok"}


def test_one_node_asking_twice_waits_again_after_the_first_value(rt: Runtime) -> None:
    first = rt.invoke("two", {"question": "x"})
    assert [i["value"] for i in first.interrupts] == ["first?"]
    rt.resume(first.thread_id, "a")
    second = rt.run(first.thread_id)
    assert [i["value"] for i in second.interrupts] == ["second?"]
    rt.resume(second.thread_id, "b")
    assert rt.run(first.thread_id).state == "done"
    assert rt.graph("two").get_state(rt.config(first.thread_id)).values["answer"] == "a+b"


def test_several_interrupts_are_answered_by_id(rt: Runtime) -> None:
    waiting = rt.invoke("fan", {"question": "both"})
    ids = {i["value"]: i["id"] for i in waiting.interrupts}
    assert set(ids) == {"left?", "right?"}
    with pytest.raises(BadInput, match="--interrupt-id"):
        rt.resume(waiting.thread_id, "no id")
    with pytest.raises(BadInput, match="no pending interrupt"):
        rt.resume(waiting.thread_id, "x", interrupt_id="not-one-of-them")

    rt.resume(waiting.thread_id, "L", interrupt_id=ids["left?"])
    half = rt.run(waiting.thread_id)
    assert [i["value"] for i in half.interrupts] == ["right?"]
    rt.resume(waiting.thread_id, "R", interrupt_id=half.interrupts[0]["id"])
    assert rt.run(waiting.thread_id).state == "done"
    steps = rt.graph("fan").get_state(rt.config(waiting.thread_id)).values["steps"]
    assert sorted(steps) == ["left:L", "right:R"]


def test_resume_of_a_run_that_waits_for_no_value_is_refused(rt: Runtime) -> None:
    done = rt.invoke("chat", say("hi"))
    with pytest.raises(TransitionNotAllowed, match="waits for no value"):
        rt.resume(done.thread_id, "late")


def test_a_repeated_value_changes_nothing_and_another_is_refused(rt: Runtime) -> None:
    waiting = rt.invoke("ask", {"question": "q"})
    rt.resume(waiting.thread_id, "yes")
    rt.resume(waiting.thread_id, "yes")
    with pytest.raises(TransitionNotAllowed, match="another value"):
        rt.resume(waiting.thread_id, "no")
    assert rt.run(waiting.thread_id).state == "done"
    assert rt.graph("ask").get_state(rt.config(waiting.thread_id)).values["answer"] == "yes"


def test_a_chat_thread_holds_one_run_per_message(rt: Runtime) -> None:
    first = rt.invoke("chat", say("one"), thread_id="chat-many")
    second = rt.invoke("chat", say("two"), thread_id="chat-many")
    assert (first.run_number, second.run_number) == (1, 2)
    assert first.run_id != second.run_id
    messages = rt.graph("chat").get_state(rt.config("chat-many")).values["messages"]
    assert [m.content for m in messages] == [
        "one",
        "echo one (1 so far)",
        "two",
        "echo two (3 so far)",
    ]
    runs = rt.history("chat-many")["runs"]
    assert [(r["run"], r["state"]) for r in runs] == [(1, "done"), (2, "done")]


def test_a_fork_of_a_chat_thread_goes_on_with_its_own_runs(rt: Runtime) -> None:
    rt.invoke("chat", say("one"), thread_id="chat-origin")
    rt.invoke("chat", say("two"), thread_id="chat-origin")
    forked = rt.fork("chat-origin", new_thread_id="chat-fork")
    assert rt.run(forked.thread_id).state == "done"  # the copied state: nothing left to do
    rt.invoke("chat", say("three"), thread_id="chat-fork")
    contents = [
        m.content for m in rt.graph("chat").get_state(rt.config("chat-fork")).values["messages"]
    ]
    assert contents[-2:] == ["three", "echo three (5 so far)"]
    origin = rt.graph("chat").get_state(rt.config("chat-origin")).values["messages"]
    assert len(origin) == 4


def test_a_start_key_of_an_earlier_run_gives_that_run(rt: Runtime) -> None:
    first = rt.invoke("chat", say("one"), thread_id="chat-keys", key="msg-1")
    rt.invoke("chat", say("two"), thread_id="chat-keys", key="msg-2")
    again = rt.invoke("chat", say("one"), thread_id="chat-keys", key="msg-1")
    assert (again.run_number, again.run_id, again.state) == (1, first.run_id, "done")
    assert len(rt.history("chat-keys")["runs"]) == 2


def test_a_second_run_while_one_is_active_is_refused_and_changes_nothing(
    rt: Runtime, sql: psycopg.Connection[Any]
) -> None:
    rt.invoke("ask", {"question": "q"}, thread_id="busy-thread")  # waits for its value
    before = sql.execute(
        "SELECT r.*, (SELECT count(*) FROM waystone.thread_runs t "
        "WHERE t.thread_id = r.thread_id) AS past FROM waystone.runs r WHERE thread_id = %s",
        ("busy-thread",),
    ).fetchall()
    with pytest.raises(TransitionNotAllowed, match="one run at a time"):
        rt.start("ask", {"question": "another"}, thread_id="busy-thread")
    with pytest.raises(TransitionNotAllowed, match="one run at a time"):
        rt.invoke("ask", {"question": "another"}, thread_id="busy-thread")
    after = sql.execute(
        "SELECT r.*, (SELECT count(*) FROM waystone.thread_runs t "
        "WHERE t.thread_id = r.thread_id) AS past FROM waystone.runs r WHERE thread_id = %s",
        ("busy-thread",),
    ).fetchall()
    assert after == before


def test_a_process_holding_an_earlier_runs_lease_is_fenced_out(rt: Runtime) -> None:
    rt.invoke("chat", say("one"), thread_id="chat-fence")
    first_token = parts(rt).registry.get("chat-fence").lease_token
    rt.invoke("chat", say("two"), thread_id="chat-fence")
    assert parts(rt).registry.get("chat-fence").lease_token > first_token
    with pytest.raises(LeaseLost):
        parts(rt).registry.event(
            "chat-fence", "late", "a write of the first run", lease_token=first_token
        )


def test_the_preset_takes_one_run_per_thread(runtime: Runtime) -> None:
    from tests.conftest import REFUND_INPUT

    started = runtime.start("refund", REFUND_INPUT, thread_id="refund-once")
    runtime.cancel(started.thread_id, by="ops", reason="test")
    with pytest.raises(TransitionNotAllowed, match="already exists"):
        runtime.start("refund", REFUND_INPUT, thread_id="refund-once")


def test_a_graph_and_an_agent_cannot_share_a_name(database_url: str) -> None:
    settings = Settings(database_url=database_url)
    refund_too = Runtime(settings, default_agents, graphs={"refund": chat_graph})
    with refund_too as runtime, pytest.raises(BadInput) as e:
        runtime.names()
    assert "both as an agent and as a graph" in str(e.value)


def test_a_graph_that_is_not_one_is_refused_at_start(database_url: str) -> None:
    settings = Settings(database_url=database_url)
    with Runtime(settings, graphs={"odd": 42}) as runtime, pytest.raises(BadInput) as refused:
        runtime.start("odd", {})
    assert "register a StateGraph" in str(refused.value)
    with Runtime(settings) as runtime:
        assert runtime.list() == []


def test_a_runtime_given_no_agents_says_what_to_pass(database_url: str) -> None:
    """The demo's agent is the command line's: a notebook's runtime drives what it is given."""
    from tests.conftest import REFUND_INPUT

    with Runtime(Settings(database_url=database_url)) as runtime:
        assert "refund" not in runtime.names()
        with pytest.raises(BadInput) as told:
            runtime.start("refund", REFUND_INPUT)
    assert "unknown agent or graph 'refund'" in str(told.value)
    assert 'Runtime(agents={"refund": refund.build()})' in str(told.value)


@pytest.fixture
def graph_cli(database_url: str, tmp_path: Any) -> Cli:
    cli = Cli(database_url, None, tmp_path)
    cli.env["WAYSTONE_GRAPHS"] = GRAPHS
    return cli


def test_three_messages_on_one_thread_from_three_processes(graph_cli: Cli) -> None:
    for n, text in enumerate(["one", "two", "three"], start=1):
        started = ok(
            graph_cli(
                "start",
                "--graph",
                "chat",
                "--thread-id",
                "chat-cli",
                "--json",
                "--input",
                json.dumps(say(text)),
            )
        )
        assert (started["state"], started["run_number"]) == ("queued", n)
        assert ok(graph_cli("run", "chat-cli", "--json"))["state"] == "done"
    history = ok(graph_cli("history", "chat-cli", "--json"))
    assert [(r["run"], r["state"]) for r in history["runs"]] == [
        (1, "done"),
        (2, "done"),
        (3, "done"),
    ]
    last = history["checkpoints"][-1]
    assert last["next"] == []


def test_a_start_on_a_busy_thread_exits_4(graph_cli: Cli) -> None:
    ok(
        graph_cli(
            "start",
            "--graph",
            "ask",
            "--thread-id",
            "ask-busy",
            "--json",
            "--input",
            '{"question": "q"}',
        )
    )
    refused = graph_cli(
        "start", "--graph", "ask", "--thread-id", "ask-busy", "--input", '{"question": "again"}'
    )
    assert refused.returncode == 4, refused.stderr
    assert "one run at a time" in refused.stderr


def test_resume_from_another_process_continues_the_run(graph_cli: Cli) -> None:
    waiting = ok(graph_cli("start", "--graph", "ask", "--json", "--input", '{"question": "q"}'))
    thread_id = waiting["thread_id"]
    waiting = ok(graph_cli("run", thread_id, "--json"))
    assert [i["value"] for i in waiting["interrupts"]] == [{"question": "q"}]
    shown = graph_cli("status", thread_id)
    assert "interrupt" in shown.stdout and "waystone resume" in shown.stdout
    done = ok(graph_cli("resume", thread_id, "--value", '"green"', "--run", "--json"))
    assert done["state"] == "done"


def test_bad_graph_input_exits_2(graph_cli: Cli) -> None:
    both = graph_cli("start", "--graph", "ask", "--agent", "refund", "--input", "{}")
    assert both.returncode == 2 and "one of --agent" in both.stderr
    unknown = graph_cli("start", "--graph", "nope", "--input", "{}")
    assert unknown.returncode == 2 and "unknown agent or graph 'nope'" in unknown.stderr
    assert "refund" in unknown.stderr and "Runtime(" not in unknown.stderr  # the CLI has it
    broken = graph_cli("start", "--graph", "chat", "--input", "{}", env={"WAYSTONE_GRAPHS": "chat"})
    assert broken.returncode == 2 and "name=module:attribute" in broken.stderr
    value = graph_cli("resume", "some-thread", "--value", "{not json")
    assert value.returncode == 2


def test_a_start_key_given_again_after_its_run_ended_starts_no_second_run(rt: Runtime) -> None:
    first = rt.invoke("chat", say("hello"), thread_id="chat-retry", key="msg-a")
    again = rt.invoke("chat", say("hello"), thread_id="chat-retry", key="msg-a")
    assert (again.run_number, again.run_id) == (1, first.run_id)
    assert rt.start("chat", say("hello"), thread_id="chat-retry", key="msg-a").run_number == 1
    messages = rt.graph("chat").get_state(rt.config("chat-retry")).values["messages"]
    assert [m.content for m in messages] == ["hello", "echo hello (1 so far)"]


def test_a_start_key_another_threads_run_holds_gives_that_run(rt: Runtime) -> None:
    rt.invoke("chat", say("hello"), thread_id="chat-a", key="msg-b")
    rt.invoke("chat", say("other"), thread_id="chat-b")
    found = rt.invoke("chat", say("hello"), thread_id="chat-b", key="msg-b")
    assert found.thread_id == "chat-a"
    with pytest.raises(TransitionNotAllowed, match="another agent or input"):
        rt.start("chat", say("different"), thread_id="chat-b", key="msg-b")
    assert len(rt.history("chat-b")["runs"]) == 1


def test_a_new_run_on_a_thread_moves_the_lease_token_on(rt: Runtime) -> None:
    rt.invoke("chat", say("one"), thread_id="chat-token")
    ended = parts(rt).registry.get("chat-token").lease_token
    rt.start("chat", say("two"), thread_id="chat-token")
    assert parts(rt).registry.get("chat-token").lease_token == ended + 1


def test_interrupts_that_look_like_waystones_waits_are_the_graphs_own(rt: Runtime) -> None:
    waiting = rt.invoke("alike", {"question": "q"})
    assert (waiting.state, waiting.waiting_for) == ("waiting", "resume")
    assert [i["value"]["kind"] for i in waiting.interrupts] == ["approval"]
    rt.resume(waiting.thread_id, "one")
    second = rt.run(waiting.thread_id)
    assert [i["value"]["kind"] for i in second.interrupts] == ["signal"]
    rt.resume(waiting.thread_id, "two")
    assert rt.run(waiting.thread_id).state == "done"
    assert rt.graph("alike").get_state(rt.config(waiting.thread_id)).values["answer"] == "one/two"


def test_a_graph_with_a_static_breakpoint_is_refused(database_url: str) -> None:
    settings = Settings(database_url=database_url)
    with Runtime(settings, graphs={"bp": breakpoint_graph()}) as runtime:
        with pytest.raises(BadInput, match="interrupt_before/interrupt_after"):
            runtime.start("bp", {"question": "q"})
        assert runtime.list() == []


def test_a_builder_that_raises_is_bad_input(database_url: str) -> None:
    settings = Settings(database_url=database_url)
    with Runtime(settings, graphs={"broken": broken_builder}) as runtime:
        with pytest.raises(BadInput, match="cannot be built: RuntimeError: the user's builder"):
            runtime.start("broken", {})
        assert runtime.list() == []


def test_a_graph_named_twice_in_waystone_graphs_is_refused() -> None:
    from waystone._runtime.graphs import load_graphs

    with pytest.raises(BadInput, match="twice"):
        load_graphs("a=tests.support.graphs:chat_graph,a=tests.support.graphs:ask_graph")


def test_a_graphs_run_needs_an_input(rt: Runtime) -> None:
    with pytest.raises(BadInput, match="needs an input"):
        rt.start("chat", None)  # type: ignore[arg-type]
    assert rt.list() == []


def test_an_authenticated_viewer_sees_an_interrupts_real_values(rt: Runtime) -> None:
    waiting = rt.invoke("ask", {"question": "mail ana@example.com?"})
    [stored] = waiting.interrupts
    assert "ana@example.com" not in json.dumps(stored)
    [shown] = rt.revealed(waiting).interrupts
    assert shown["value"] == {"question": "mail ana@example.com?"}


def test_requeue_leaves_an_earlier_runs_effects_as_they_were(
    rt: Runtime, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    provider.inject("refunds", "permanent", times=2)
    first = rt.invoke("pay", {"order_id": "o-1"}, thread_id="pay-twice")
    assert first.state == "failed"
    second = rt.invoke("pay", {"order_id": "o-2"}, thread_id="pay-twice")
    assert second.state == "failed"
    before = effects(sql, "pay-twice", "key", "status", "attempts", order="key")
    assert [status for _, status, _ in before] == ["failed", "failed"]
    rt.requeue("pay-twice", by="ops", reason="the provider is fixed")
    statuses = dict(
        sql.execute(
            "SELECT e.args->>'order_id', e.status FROM waystone.effects e WHERE thread_id = %s",
            ("pay-twice",),
        ).fetchall()
    )
    assert statuses == {"o-1": "failed", "o-2": "intent"}
