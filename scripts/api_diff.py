"""One client script against the reference server (``langgraph dev``) and ``waystone api``
on the same graph; prints what each answered and every difference.

    python scripts/api_diff.py [--langgraph PATH]   # the `langgraph` command of a venv
                                                    # with 'langgraph-cli[inmem]'

The script drives a chat graph that hands a question to a person (``interrupt()``)
through the official client: a thread, a message, a question and its interrupt, the
answer by ``command``, another message, the state, the history and the runs; then a run
made while another is held at a gate (a file), with each ``multitask_strategy``; then
what LangGraph's own clients send: each stream mode alone on a graph whose model streams
tokens and writes a custom event, a regenerate (a run from an earlier ``checkpoint_id``),
assistants made by a user and their versions, the store, and JSON bodies sent as
``text/plain``. What is
compared is what a client can rely on: the keys of each answer, the statuses, the
messages (type and content), the interrupts' values and the shape of the history; ids
and times differ by nature. Waystone runs on an embedded Postgres with one worker.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_sync_client

from waystone._db import embedded

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "api-diff"
GRAPH = """
import os
import time
from typing import TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langgraph.config import get_store, get_stream_writer
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt


def assist(state: MessagesState) -> dict:
    last = state["messages"][-1]
    if str(last.content).endswith("?"):
        answer = interrupt({"question": last.content})
        return {"messages": [AIMessage(f"a person says: {answer}", id="answer")]}
    return {"messages": [AIMessage(f"echo {last.content}", id=f"echo-{last.content}")]}


builder = StateGraph(MessagesState)
builder.add_node("assist", assist)
builder.add_edge(START, "assist")
builder.add_edge("assist", END)
graph = builder.compile()


def note(state: MessagesState) -> dict:
    return {"messages": [AIMessage(f"noted {state['messages'][-1].content}")]}


def work(state: MessagesState) -> dict:  # waits until its gate (a file) is opened
    asked = [m.content for m in state["messages"] if m.type == "human"][-1]
    gate = os.path.join(os.environ["API_DIFF_GATES"], asked)
    deadline = time.monotonic() + 60
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.02)
    return {"messages": [AIMessage(f"done {asked}")]}


gated_builder = StateGraph(MessagesState)
gated_builder.add_node("note", note)
gated_builder.add_node("work", work)
gated_builder.add_edge(START, "note")
gated_builder.add_edge("note", "work")
gated_builder.add_edge("work", END)
gated = gated_builder.compile()


def inner(state: MessagesState) -> dict:
    said = state["messages"][-1].content
    return {"messages": [AIMessage(f"inner {said}", id=f"inner-{said}")]}


child = StateGraph(MessagesState)
child.add_node("inner", inner)
child.add_edge(START, "inner")
child.add_edge("inner", END)

def first(state: MessagesState) -> dict:
    return {"messages": [AIMessage("first", id=f"first-{len(state['messages'])}")]}


parent = StateGraph(MessagesState)
parent.add_node("first", first)
parent.add_node("child", child.compile())
parent.add_edge(START, "first")
parent.add_edge("first", "child")
parent.add_edge("child", END)
nested = parent.compile()


class Echo(BaseChatModel):
    # a fake model: says the last message back in three tokens
    @property
    def _llm_type(self) -> str:
        return "echo"

    def _words(self, messages):
        return ["echo ", f"{messages[-1].content} ", "done"]

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        text = "".join(self._words(messages))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        for word in self._words(messages):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=word))
            if run_manager is not None:
                run_manager.on_llm_new_token(word, chunk=chunk)
            yield chunk


MODEL = Echo()


def talk(state: MessagesState) -> dict:
    get_stream_writer()({"progress": "thinking"})
    return {"messages": [MODEL.invoke(state["messages"])]}


talker = StateGraph(MessagesState)
talker.add_node("talk", talk)
talker.add_edge(START, "talk")
talker.add_edge("talk", END)
chat = talker.compile()


def remember(state: dict) -> dict:  # the store, as a node reaches it (get_store())
    store = get_store()
    store.put(("memories",), state["key"], {"note": state["note"]})
    return {"found": sorted(i.key for i in store.search(("memories",), limit=100))}


class Memo(TypedDict, total=False):
    key: str
    note: str
    found: list


memo_builder = StateGraph(Memo)
memo_builder.add_node("remember", remember)
memo_builder.add_edge(START, "remember")
memo_builder.add_edge("remember", END)
memo = memo_builder.compile()
"""


# Where Waystone differs on purpose (docs/api.md says so): what it answers instead.
KNOWN = {
    "subgraphs, run 1": "a subgraph's message, streamed live, comes before the subgraph's "
    "committed debug events (its checkpoints commit after the parent's step)",
    "mode messages": "the legacy messages mode sends each message whole, not token by token",
    "mode events": "not yet: LangChain's callback events are refused (422)",
    "run keys": "no langsmith_session_name: Waystone has no LangSmith tracing project",
    "runs": "a resume is the same Waystone run going on, not a run of its own",
    "assistants: a graph's own changed": "a graph's own assistant is the graph as served: "
    "make an assistant of it instead",
    "assistants: the graphs' own": "waystone's command line drives its demo agent, refund, too",
    "durability async": "every step is a committed checkpoint: weaker durabilities are 422",
    "preflight": "no access-control-allow-private-network: only langgraph dev sends it",
    "thread stream": "each run's values, updates and messages-tuple: not its own stream_mode",
}


MISSING = "(not answered: an earlier call of its section failed)"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _messages(values: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["type"], m["content"]) for m in values.get("messages", [])]


def _texts(values: dict[str, Any]) -> list[str]:
    return [m["content"] for m in values.get("messages", [])]


def _status(lg: Any, thread_id: str, run: dict[str, Any]) -> Any:
    try:
        return lg.runs.get(thread_id, run["run_id"])["status"]
    except httpx.HTTPStatusError as exc:
        return exc.response.status_code


def _until(check: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError("timed out")
        time.sleep(0.05)


def double_texting(lg: Any, gates: Path) -> list[tuple[str, Any]]:
    """A run made while another is held at its gate, with each multitask_strategy."""
    seen: list[tuple[str, Any]] = []
    for strategy in ("reject", "enqueue", "interrupt", "rollback"):
        seen += _double_text(lg, gates, strategy)
    return seen


def _double_text(lg: Any, gates: Path, strategy: str) -> list[tuple[str, Any]]:
    seen: list[tuple[str, Any]] = []
    t = lg.threads.create()["thread_id"]
    (gates / f"{strategy}-p").touch()
    lg.runs.wait(t, "gated", input=_say(f"{strategy}-p"))
    made = [lg.runs.create(t, "gated", input=_say(f"{strategy}-a"))]
    _until(lambda: f"noted {strategy}-a" in _texts(lg.threads.get_state(t)["values"]))
    try:
        second = _say(f"{strategy}-b")
        made.append(lg.runs.create(t, "gated", input=second, multitask_strategy=strategy))
        seen.append((f"{strategy}: second run", made[-1]["status"]))
    except httpx.HTTPStatusError as exc:
        seen.append((f"{strategy}: second run", exc.response.status_code))
    if strategy == "enqueue":
        made.append(lg.runs.create(t, "gated", input=_say(f"{strategy}-c")))
    seen.append((f"{strategy}: first run, then", _status(lg, t, made[0])))
    seen.append((f"{strategy}: thread, then", lg.threads.get(t)["status"]))
    for gate in "cba":
        (gates / f"{strategy}-{gate}").touch()
    lg.runs.join(t, made[-1]["run_id"])
    _until(lambda: lg.threads.get(t)["status"] == "idle")
    seen.append((f"{strategy}: runs", [_status(lg, t, r) for r in made]))
    seen.append((f"{strategy}: runs listed", [r["status"] for r in lg.runs.list(t)]))
    seen.append((f"{strategy}: state", _texts(lg.threads.get_state(t)["values"])))
    history = lg.threads.get_history(t, limit=100)
    seen.append((f"{strategy}: history", [len(_texts(h["values"])) for h in history]))
    return seen


def _say(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def script(url: str, api_key: str | None, gates: Path) -> list[tuple[str, Any]]:
    """The calls, and what a client can rely on in each answer."""
    seen: list[tuple[str, Any]] = []
    with get_sync_client(url=url, api_key=api_key) as lg:
        [assistant] = lg.assistants.search(graph_id="assist")
        seen.append(("assistant keys", sorted(assistant)))
        thread = lg.threads.create(metadata={"team": "support"})
        seen.append(("thread keys", sorted(thread)))
        seen.append(("thread status", thread["status"]))
        t = thread["thread_id"]
        first = lg.runs.wait(t, "assist", input={"messages": [{"role": "user", "content": "hi"}]})
        seen.append(("wait: messages", _messages(first)))
        asked = lg.runs.wait(
            t, "assist", input={"messages": [{"role": "user", "content": "refund?"}]}
        )
        seen.append(("wait: interrupts", [i["value"] for i in asked.get("__interrupt__", [])]))
        state = lg.threads.get_state(t)
        seen.append(("state keys", sorted(state)))
        seen.append(("state next", state["next"]))
        seen.append(("state interrupts", [i["value"] for i in state["interrupts"]]))
        seen.append(("state tasks", [(k["name"], len(k["interrupts"])) for k in state["tasks"]]))
        seen.append(("thread status, waiting", lg.threads.get(t)["status"]))
        answered = lg.runs.wait(t, "assist", command={"resume": "yes"})
        seen.append(("resume: messages", _messages(answered)))
        again = lg.runs.wait(t, "assist", input={"messages": [{"role": "user", "content": "bye"}]})
        seen.append(("again: messages", _messages(again)))
        final = lg.threads.get_state(t)
        seen.append(("final state", (_messages(final["values"]), final["next"])))
        history = lg.threads.get_history(t, limit=100)
        seen.append(
            (
                "history: messages per checkpoint",
                [len(h["values"].get("messages", [])) for h in history],
            )
        )
        seen.append(("history: next", [h["next"] for h in history]))
        runs = lg.runs.list(t)
        seen.append(("run keys", sorted(runs[0])))
        seen.append(("runs", [r["status"] for r in runs]))
        seen.append(("thread status, at the end", lg.threads.get(t)["status"]))
        streamed = lg.threads.create()["thread_id"]
        modes = ["values", "updates", "messages-tuple"]
        for what, given in [
            ("stream: a message", {"input": {"messages": [{"role": "user", "content": "hi"}]}}),
            ("stream: a question", {"input": {"messages": [{"role": "user", "content": "ok?"}]}}),
            ("stream: its answer", {"command": {"resume": "yes"}}),
        ]:
            parts = list(lg.runs.stream(streamed, "assist", stream_mode=modes, **given))
            seen.append((f"{what}: events", [p.event for p in parts]))
            last = [p.data for p in parts if p.event == "values"][-1]
            seen.append((f"{what}: last values", _messages(last)))
            updates = [sorted(p.data) for p in parts if p.event == "updates"]
            seen.append((f"{what}: updates", updates))
            said = [
                (p.data[0]["type"], p.data[0]["content"]) for p in parts if p.event == "messages"
            ]
            seen.append((f"{what}: messages", said))
        seen += double_texting(lg, gates)
        seen += streams(lg)
        seen += every_mode(lg)
        seen += assistants(lg)
        seen += store(lg)
        seen += run_options(lg, url, api_key)
    seen += plain_bodies(url, api_key)
    return seen


MODES = (
    "values",
    "updates",
    "messages-tuple",
    "messages",
    "custom",
    "events",
    "debug",
    "checkpoints",
    "tasks",
    "tools",
)


def every_mode(lg: Any) -> list[tuple[str, Any]]:
    """Each stream mode alone, on a graph whose model streams tokens and whose node writes
    a custom event: what each event is (see :func:`_shape`)."""
    seen: list[tuple[str, Any]] = []
    for mode in MODES:
        t = lg.threads.create()["thread_id"]
        try:
            parts = list(lg.runs.stream(t, "chat", input=_say("hi"), stream_mode=mode))
            seen.append((f"mode {mode}", [_shape(p) for p in parts[1:]]))
        except httpx.HTTPStatusError as exc:
            seen.append((f"mode {mode}", exc.response.status_code))
    return seen


def _shape(part: Any) -> Any:
    """What a client can rely on in an event of any mode."""
    event, data = part.event, part.data
    if event == "messages":  # messages-tuple: a chunk and its metadata
        return [event, data[0]["type"], data[0]["content"], data[1].get("langgraph_node")]
    if event.startswith("messages/"):
        if event == "messages/metadata":
            return [event, sorted(next(iter(data.values()))["metadata"])[:3]]
        return [event, [(m["type"], m["content"]) for m in data]]
    if event == "events":
        return [event, data["event"], data.get("name")]
    if event in ("values", "custom"):
        return [event, _messages(data) if event == "values" else data]
    if event == "updates":
        return [event, sorted(data)]
    if event in ("checkpoints", "tasks", "tools"):
        return [event, sorted(data), data.get("name")]
    if event == "debug":
        return [event, data["type"]]
    return [event]


def plain_bodies(url: str, api_key: str | None) -> list[tuple[str, Any]]:
    """JSON sent as ``text/plain``, as LangGraph Studio sends it."""
    headers = {"content-type": "text/plain;charset=UTF-8"}
    if api_key:
        headers["x-api-key"] = api_key
    made = httpx.post(f"{url}/threads", content=json.dumps({"metadata": {"a": 1}}), headers=headers)
    found = httpx.post(f"{url}/assistants/search", content="{}", headers=headers)
    return [
        ("text/plain thread", (made.status_code, sorted(made.json()) if made.is_success else None)),
        ("text/plain search", (found.status_code, isinstance(found.json(), list))),
    ]


def streams(lg: Any) -> list[tuple[str, Any]]:
    """The other stream modes: debug, and a subgraph's events (``stream_subgraphs``)."""
    seen: list[tuple[str, Any]] = []
    said = lg.threads.create()["thread_id"]
    for what, given in [
        ("debug: a message", {"input": {"messages": [{"role": "user", "content": "hi"}]}}),
        ("debug: a question", {"input": {"messages": [{"role": "user", "content": "ok?"}]}}),
        ("debug: its answer", {"command": {"resume": "yes"}}),
    ]:
        parts = list(lg.runs.stream(said, "assist", stream_mode=["debug", "values"], **given))
        seen.append((what, [_part(p) for p in parts[1:]]))
    modes = ["values", "updates", "messages-tuple", "debug"]
    nested = lg.threads.create()["thread_id"]
    hi = {"messages": [{"role": "user", "content": "hi"}]}
    for n in range(2):
        parts = list(
            lg.runs.stream(nested, "nested", input=hi, stream_mode=modes, stream_subgraphs=True)
        )
        seen.append((f"subgraphs, run {n + 1}", [_part(p) for p in parts[1:]]))
    parts = list(lg.runs.stream(nested, "nested", input=hi, stream_mode=modes[:3]))
    seen.append(("no subgraphs", [_part(p) for p in parts[1:]]))
    return seen


def store(lg: Any) -> list[tuple[str, Any]]:
    """The store's routes, and a node's store: the same items. A listing's order is left
    out (the reference's in-memory store lists in put order, its Postgres one and
    Waystone's the newest first)."""
    seen: list[tuple[str, Any]] = []
    lg.store.put_item(["a", "b"], "k1", {"n": 1, "tag": "x"})
    lg.store.put_item(["a", "c"], "k2", {"n": 2, "tag": "y"}, ttl=60)
    item = lg.store.get_item(["a", "b"], "k1")
    seen.append(("store: item", (sorted(item), item["namespace"], item["value"])))
    seen.append(("store: no item", lg.store.get_item(["a", "b"], "none")))
    found = lg.store.search_items(["a"])["items"]
    seen.append(("store: search", sorted((i["key"], sorted(i)) for i in found)))
    tagged = lg.store.search_items(["a"], filter={"tag": "y"})["items"]
    seen.append(("store: filter", [(i["key"], i["score"]) for i in tagged]))
    for what, given in [
        ("store: namespaces", {}),
        ("store: namespaces, depth 1", {"prefix": ["a"], "max_depth": 1}),
        ("store: namespaces, suffix", {"suffix": ["c"]}),
    ]:
        seen.append((what, sorted(lg.store.list_namespaces(**given)["namespaces"])))
    lg.store.delete_item(["a", "b"], "k1")
    seen.append(("store: deleted", lg.store.get_item(["a", "b"], "k1")))
    lg.store.put_item(["memories"], "from-sdk", {"note": "put by the client"})
    t = lg.threads.create()["thread_id"]
    done = lg.runs.wait(t, "memo", input={"key": "from-node", "note": "put by the node"})
    seen.append(("store: a node's search", done["found"]))
    memories = lg.store.search_items(["memories"])["items"]
    seen.append(("store: the node's item", sorted(i["key"] for i in memories)))
    for what, body in [
        ("store: a label with a period", {"namespace": ["a.b"], "key": "k", "value": {}}),
        ("store: the reserved label", {"namespace": ["langgraph"], "key": "k", "value": {}}),
        ("store: no value", {"namespace": ["a"], "key": "k"}),
    ]:
        try:
            lg.http.put("/store/items", json=body)
            seen.append((what, "accepted"))
        except httpx.HTTPStatusError as exc:
            seen.append((what, exc.response.status_code))
    return seen


def assistants(lg: Any) -> list[tuple[str, Any]]:
    """The graphs' own assistants and one a user makes: versions, search, a run on it."""
    seen: list[tuple[str, Any]] = []
    fields = ("graph_id", "version", "name", "description", "config", "context", "metadata")
    system = lg.assistants.search(metadata={"created_by": "system"})
    seen.append(("assistants: the graphs' own", sorted(a["graph_id"] for a in system)))
    made = lg.assistants.create(
        "assist",
        config={"configurable": {"persona": "pirate"}},
        metadata={"team": "a"},
        name="Pirate",
    )
    aid = made["assistant_id"]
    seen.append(("assistants: made", (sorted(made), {k: made[k] for k in fields})))
    changed = lg.assistants.update(
        aid, config={"configurable": {"persona": "robot"}}, metadata={"tier": 2}
    )
    seen.append(("assistants: updated", {k: changed[k] for k in fields}))
    versions = lg.assistants.get_versions(aid)
    seen.append(("assistants: versions", [(v["version"], sorted(v)) for v in versions]))
    back = lg.assistants.set_latest(aid, 1)
    seen.append(("assistants: version 1 again", (back["version"], back["config"])))
    seen.append(("assistants: get", lg.assistants.get(aid)["version"]))
    found = lg.assistants.search(metadata={"team": "a"})
    seen.append(("assistants: found by metadata", [a["assistant_id"] == aid for a in found]))
    seen.append(("assistants: found by name", len(lg.assistants.search(name="pirat"))))
    seen.append(("assistants: count", lg.assistants.count(graph_id="assist")))
    picked = lg.assistants.search(graph_id="assist", select=["assistant_id", "version"], limit=1)
    seen.append(("assistants: select", [sorted(a) for a in picked]))
    t = lg.threads.create()["thread_id"]
    said = lg.runs.wait(t, aid, input={"messages": [{"role": "user", "content": "hi"}]})
    seen.append(("assistants: a run on one", _messages(said)))
    run = lg.runs.list(t)[0]
    seen.append(
        (
            "assistants: the run's",
            (run["assistant_id"] == aid, run["metadata"].get("assistant_id") == aid),
        )
    )
    nested = next(a for a in system if a["graph_id"] == "nested")["assistant_id"]
    subgraphs = lg.assistants.get_subgraphs(nested)
    shown = {
        ns: (sorted(s), sorted(s["state_schema"]["properties"])) for ns, s in subgraphs.items()
    }
    seen.append(("assistants: subgraphs", shown))
    seen.append(("assistants: schemas", sorted(lg.assistants.get_schemas(aid))))
    for what, call in [
        ("assistants: an unknown graph", lambda: lg.assistants.create("nope")),
        ("assistants: an unknown version", lambda: lg.assistants.set_latest(aid, 7)),
        ("assistants: not an id", lambda: lg.assistants.get("not-a-uuid")),
        ("assistants: a graph's own changed", lambda: lg.assistants.update(nested, name="x")),
        ("assistants: deleted", lambda: lg.assistants.delete(aid)),
        ("assistants: deleted, then", lambda: lg.assistants.get(aid)),
    ]:
        try:
            call()
            seen.append((what, "ok"))
        except httpx.HTTPStatusError as exc:
            seen.append((what, exc.response.status_code))
    return seen


def run_options(lg: Any, url: str, api_key: str | None) -> list[tuple[str, Any]]:
    """A run from a checkpoint (regenerate, edit), durability, the thread's graph in its
    metadata, a text/plain body, a browser's preflight and a thread's stream."""
    seen: list[tuple[str, Any]] = []
    t = lg.threads.create()["thread_id"]
    lg.runs.wait(t, "assist", input=_say("hi"))
    lg.runs.wait(t, "assist", input=_say("yo"))
    history = lg.threads.get_history(t, limit=100)
    before = next(
        h for h in history if h["next"] == ["assist"] and len(h["values"]["messages"]) == 3
    )
    again = lg.runs.wait(
        t, "assist", input=None, checkpoint_id=before["checkpoint"]["checkpoint_id"]
    )
    seen.append(("regenerate: messages", _messages(again)))
    turn = next(h for h in history if h["next"] == [] and len(h["values"]["messages"]) == 2)
    edited = lg.runs.wait(t, "assist", input=_say("what"), checkpoint=turn["checkpoint"])
    seen.append(("edit: messages", _messages(edited)))
    seen.append(("edit: history", [len(_texts(h["values"])) for h in lg.threads.get_history(t)]))
    modes = ["values", "messages-tuple", "updates"]
    at = history[0]["checkpoint"]
    for what, given in [
        ("regenerate", {"input": None, "checkpoint_id": before["checkpoint"]["checkpoint_id"]}),
        ("edit", {"input": _say("how"), "checkpoint": turn["checkpoint"]}),
        ("edit at the newest", {"input": _say("now"), "checkpoint": at}),
    ]:
        parts = list(lg.runs.stream(t, "assist", stream_mode=modes, **given))
        seen.append((f"stream a {what}", [_part(p) for p in parts[1:]]))
    seen.append(("thread metadata", sorted(lg.threads.get(t)["metadata"])))
    found = lg.threads.search(metadata={"graph_id": "assist"}, limit=100)
    seen.append(("search by graph_id", t in [f["thread_id"] for f in found]))
    for durability in ("sync", "async"):
        try:
            lg.runs.wait(t, "assist", input=_say("d"), durability=durability)
            seen.append((f"durability {durability}", 200))
        except httpx.HTTPStatusError as exc:
            seen.append((f"durability {durability}", exc.response.status_code))
    headers = {"x-api-key": api_key or "", "content-type": "text/plain;charset=UTF-8"}
    with httpx.Client(base_url=url, headers=headers) as plain:
        made = plain.post("/threads", content='{"metadata": {"k": 1}}')
        seen.append(("text/plain body", (made.status_code, made.json().get("metadata"))))
        asked = plain.options(
            "/threads/search",
            headers={
                "Origin": "http://chat.example:3000",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type,x-api-key",
            },
        )
        cors = {k: v for k, v in asked.headers.items() if k.startswith("access-control-allow")}
        seen.append(("preflight", (asked.status_code, sorted(cors))))
        posted = plain.post("/threads/search", content="{}", headers={"Origin": "http://x.example"})
        exposed = posted.headers.get("access-control-expose-headers", "")
        seen.append(("cross-origin answer", (posted.status_code, "content-location" in exposed)))
    joined: list[Any] = []

    def follow() -> None:  # the thread's stream, joined before its next run
        with get_sync_client(url=url, api_key=api_key) as client:
            for part in client.threads.join_stream(t):
                joined.append(part)
                if part.event == "values" and _texts(part.data)[-1] == "echo s2":
                    return

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    time.sleep(2)  # joined by then (a script, not a test)
    lg.runs.wait(t, "assist", input=_say("s2"))
    follower.join(timeout=30)
    seen.append(("thread stream", [_part(p) for p in joined if p.event != "metadata"]))
    return seen


def _part(part: Any) -> Any:
    """What a client can rely on in a streamed event (without its namespace's task id)."""
    event, data = part.event.split("|")[0], part.data
    ns = part.event.split("|")[1].split(":")[0] if "|" in part.event else ""
    if event == "messages":
        return [event, ns, data[0]["type"], data[0]["content"], data[1].get("langgraph_node")]
    if event == "values":
        return [event, ns, _messages(data)]
    if event == "updates":
        return [event, ns, sorted(data)]
    if event != "debug":
        return [event, ns]
    payload = data["payload"]
    shown = [event, ns, data["type"], data["step"], sorted(payload)]
    if data["type"] == "checkpoint":
        meta = payload["metadata"]
        tasks = [(t["name"], sorted(t)) for t in payload["tasks"]]
        return [*shown, meta["source"], meta["step"], payload["next"], tasks]
    if data["type"] == "task":
        return [*shown, payload["name"], payload["triggers"], _messages(payload["input"])]
    return [*shown, payload["name"], sorted(payload["result"] or {}), len(payload["interrupts"])]


def _wait_for(url: str, proc: subprocess.Popen[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), 1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"nothing listens on {url}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--langgraph", default="langgraph", help="the reference's command")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ws-api-diff-") as tmp:
        project = Path(tmp)
        (project / "agent.py").write_text(GRAPH)
        config = project / "langgraph.json"
        config.write_text(
            json.dumps(
                {
                    "dependencies": ["."],
                    "graphs": {
                        "assist": "./agent.py:graph",
                        "gated": "./agent.py:gated",
                        "nested": "./agent.py:nested",
                        "chat": "./agent.py:chat",
                        "memo": "./agent.py:memo",
                    },
                }
            )
        )
        gates = {side: project / f"gates-{side}" for side in ("ref", "ours")}
        with side_by_side(
            project,
            config,
            args.langgraph,
            token=TOKEN,
            ref_env={"API_DIFF_GATES": str(gates["ref"])},
            our_env={"API_DIFF_GATES": str(gates["ours"])},
        ) as (ref_url, our_url):
            for gate in gates.values():
                gate.mkdir()
            theirs = script(ref_url, None, gates["ref"])
            mine = script(our_url, TOKEN, gates["ours"])
    return report(theirs, mine, KNOWN)


@contextmanager
def side_by_side(
    project: Path,
    config: Path,
    langgraph: str,
    *,
    token: str | None,
    ref_env: dict[str, str] | None = None,
    our_env: dict[str, str] | None = None,
) -> Iterator[tuple[str, str]]:
    """``langgraph dev`` and ``waystone api`` (with a worker, on an embedded Postgres
    under ``project``) serving ``config``, until the block ends: their URLs."""
    procs: list[subprocess.Popen[str]] = []
    db_url = embedded.ensure_server(project / "home")
    quiet: dict[str, Any] = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    try:
        ref_url = f"http://127.0.0.1:{_port()}"
        command = [langgraph, "dev", "--no-browser", "--no-reload"]
        command += ["--port", ref_url.rsplit(":", 1)[1], "--config", str(config)]
        env = {**os.environ, **(ref_env or {})}
        ref = subprocess.Popen(command, cwd=project, env=env, text=True, **quiet)
        procs.append(ref)
        env = {
            **os.environ,
            "WAYSTONE_DATABASE_URL": db_url,
            "WAYSTONE_HOME": str(project / "home"),
            "WAYSTONE_LANGGRAPH_JSON": str(config),
            "PYTHONPATH": str(ROOT),
            **({"WAYSTONE_API_TOKEN": token} if token else {}),
            **(our_env or {}),
        }
        # a new home's database has no schema, and the servers apply none themselves
        migrate = [sys.executable, "-m", "waystone", "migrate"]
        subprocess.run(migrate, env=env, cwd=project, check=True, capture_output=True)
        worker = [sys.executable, "-m", "waystone", "worker"]
        procs.append(subprocess.Popen(worker, env=env, cwd=project, text=True, **quiet))
        api = [sys.executable, "-m", "waystone", "api", "--port", "0", "--json"]
        ours = subprocess.Popen(
            api, env=env, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        procs.append(ours)
        assert ours.stdout is not None
        our_url = json.loads(ours.stdout.readline())["url"]
        _wait_for(ref_url, ref)
        yield ref_url, our_url
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=30)
        embedded.stop(project / "home")


def report(
    theirs: list[tuple[str, Any]], mine: list[tuple[str, Any]], known: dict[str, str]
) -> int:
    """Print each answer of the reference and Waystone's where it differs (``known``: the
    differences documented, by answer); 1 if any other differs, else 0."""
    differences = 0
    ours = dict(mine)
    for what, a in theirs + [(w, MISSING) for w, _ in mine if w not in dict(theirs)]:
        b = ours.get(what, MISSING)
        mark = "  " if a == b else ("~ " if what in known else "≠ ")
        differences += mark == "≠ "
        print(f"{mark}{what}: {json.dumps(a)}")
        if a != b:
            said = f" ({known[what]})" if what in known else ""
            print(f"    waystone: {json.dumps(b)}{said}")
    print(f"{differences} differences in {len(theirs)} answers (~: documented)")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
