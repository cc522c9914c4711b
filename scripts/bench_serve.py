"""Many clients streaming at once from one server: ``waystone api`` and ``langgraph dev``.

    python scripts/bench_serve.py [--clients 100] [--concurrency 100] [--model-seconds 0.5]
                                  [--tokens 20] [--skip-reference] [--langgraph PATH] [--json]

Each client (the official ``langgraph-sdk`` async client) creates a thread of a small
chat graph (two nodes: an echo whose fake chat model streams its answer in ``--tokens``
tokens over ``--model-seconds``, as a model would, then a note), starts a run on it with
``runs.stream`` (``values``, ``updates`` and ``messages-tuple``) and reads the stream to
its end, all clients at once. Printed per server: the first-event latency (from the
request to the first event after ``metadata``) and the first-token latency (to the first
``messages`` event of the model's answer), each p50, p95, max; the events per second over
the burst (events, ``metadata`` included, over the time from the first request to the
last stream's end), the errors, and the CPU seconds each server process used during the
burst. Waystone runs one
``waystone api`` process on an embedded Postgres with one ``waystone worker --async
--concurrency N``; the reference runs ``langgraph dev --n-jobs-per-worker N`` (in memory;
``--langgraph``: by default /work/refvenv/bin/langgraph) on the same graph. Loopback
only; every process is stopped at the end, and each burst is bounded by ``--deadline``
seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psutil
from langgraph_sdk.client import LangGraphClient

from waystone._db import embedded

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from api_diff import _port, _wait_for  # noqa: E402

TOKEN = "bench-serve"
MODES = ["values", "updates", "messages-tuple"]
GRAPH = """
import asyncio

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langgraph.graph import END, START, MessagesState, StateGraph

MODEL_S = {model_s}
TOKENS = {tokens}


class Echo(BaseChatModel):
    # a fake model: says the last message back, a token every MODEL_S / TOKENS s

    @property
    def _llm_type(self) -> str:
        return "echo"

    def _words(self, messages):
        said = str(messages[-1].content)
        return [f"echo {said} " if k == 0 else f"t{k} " for k in range(TOKENS)]

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        text = "".join(self._words(messages))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        await asyncio.sleep(MODEL_S)  # the same answer, not streamed: as long to come
        return self._generate(messages)

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs):
        for word in self._words(messages):
            await asyncio.sleep(MODEL_S / TOKENS)  # the model thinking
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=word))
            if run_manager is not None:
                await run_manager.on_llm_new_token(word, chunk=chunk)
            yield chunk


MODEL = Echo()


async def echo(state: MessagesState) -> dict:
    return {"messages": [await MODEL.ainvoke(state["messages"])]}


async def note(state: MessagesState) -> dict:
    return {"messages": [AIMessage(f"{len(state['messages'])} messages so far")]}


builder = StateGraph(MessagesState)
builder.add_node("echo", echo)
builder.add_node("note", note)
builder.add_edge(START, "echo")
builder.add_edge("echo", "note")
builder.add_edge("note", END)
graph = builder.compile()
"""


def client(url: str, api_key: str | None) -> LangGraphClient:
    """The SDK's async client, with room for every stream at once (httpx's default pool
    holds 100 connections)."""
    limits = httpx.Limits(max_connections=1000, max_keepalive_connections=1000)
    return LangGraphClient(
        httpx.AsyncClient(
            base_url=url,
            transport=httpx.AsyncHTTPTransport(retries=5, limits=limits),
            timeout=httpx.Timeout(connect=30, read=300, write=300, pool=60),
            headers={"x-api-key": api_key} if api_key else {},
        )
    )


async def one(lg: LangGraphClient, n: int) -> tuple[float, float, int]:
    """A thread, a run streamed to its end: seconds to its first event and to the first
    token of the model's answer, events."""
    thread = await lg.threads.create()
    said = {"messages": [{"role": "user", "content": f"hello {n}"}]}
    began, first, token, events = time.perf_counter(), None, None, 0
    async for part in lg.runs.stream(thread["thread_id"], "chat", input=said, stream_mode=MODES):
        events += 1
        if part.event == "error":
            raise RuntimeError(f"the stream failed: {part.data}")
        if first is None and part.event != "metadata":
            first = time.perf_counter() - began
        if token is None and part.event == "messages" and _answer(part.data):
            token = time.perf_counter() - began
    if first is None or token is None or events < 5:
        raise RuntimeError(f"a stream ended after {events} events, no token: {token is None}")
    return first, token, events


def _answer(data: Any) -> bool:
    """Whether a ``messages`` event holds (part of) the model's answer."""
    message = data[0] if isinstance(data, list) and data else {}
    return isinstance(message, dict) and str(message.get("content", "")).startswith("echo")


def _percentiles(seconds: list[float]) -> dict[str, float | None]:
    found = sorted(seconds)
    if not found:
        return {"p50": None, "p95": None, "max": None}
    return {
        "p50": round(statistics.median(found) * 1000, 1),
        "p95": round(found[int(0.95 * (len(found) - 1))] * 1000, 1),
        "max": round(found[-1] * 1000, 1),
    }


def cpu_s(pids: dict[str, int]) -> dict[str, float]:
    """CPU seconds used so far by each process (with its children)."""
    used = {}
    for name, pid in pids.items():
        proc = psutil.Process(pid)
        times = [p.cpu_times() for p in [proc, *proc.children(recursive=True)]]
        used[name] = sum(t.user + t.system for t in times)
    return used


async def burst(
    url: str, api_key: str | None, pids: dict[str, int], clients: int, deadline: float
) -> dict[str, Any]:
    lg = client(url, api_key)
    try:
        await one(lg, -1)  # a warm-up: the graph loaded, the connections made
        began, cpu = time.perf_counter(), cpu_s(pids)
        done = await asyncio.wait_for(
            asyncio.gather(*(one(lg, n) for n in range(clients)), return_exceptions=True),
            deadline,
        )
        wall, cpu_after = time.perf_counter() - began, cpu_s(pids)
    finally:
        await lg.aclose()
    ok = [d for d in done if isinstance(d, tuple)]
    errors = [repr(d) for d in done if not isinstance(d, tuple)]
    events = sum(e for _, _, e in ok)
    return {
        "clients": clients,
        "completed": len(ok),
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "first_event_ms": _percentiles([f for f, _, _ in ok]),
        "first_token_ms": _percentiles([t for _, t, _ in ok]),
        "events": events,
        "events_per_s": round(events / wall, 1),
        "wall_s": round(wall, 2),
        "cpu_s": {name: round(cpu_after[name] - cpu[name], 2) for name in pids},
    }


@contextmanager
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    try:
        yield procs
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def waystone(project: Path, config: Path, concurrency: int, clients: int, deadline: float) -> Any:
    home = project / "home"
    env = {
        **os.environ,
        "WAYSTONE_DATABASE_URL": embedded.ensure_server(home),
        "WAYSTONE_HOME": str(home),
        "WAYSTONE_LANGGRAPH_JSON": str(config),
        "WAYSTONE_API_TOKEN": TOKEN,
        "PYTHONPATH": str(ROOT),
    }
    try:
        # a new home's database has no schema, and the servers apply none themselves
        migrate = [sys.executable, "-m", "waystone", "migrate"]
        subprocess.run(migrate, env=env, cwd=project, check=True, capture_output=True)
        with processes() as procs:
            worker = ["worker", "--async", "--concurrency", str(concurrency)]
            for args in (worker, ["api", "--port", "0", "--json"]):
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "waystone", *args],
                        env=env,
                        cwd=project,
                        stdout=subprocess.PIPE if args[0] == "api" else subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        text=True,
                    )
                )
            assert procs[-1].stdout is not None
            url = json.loads(procs[-1].stdout.readline())["url"]
            postmaster = (embedded.pgdata_path(home) / "postmaster.pid").read_text().split()[0]
            pids = {"waystone api": procs[1].pid, "worker": procs[0].pid}
            pids["postgres"] = int(postmaster)
            return asyncio.run(burst(url, TOKEN, pids, clients, deadline))
    finally:
        embedded.stop(home)


def reference(
    langgraph: str, project: Path, config: Path, concurrency: int, clients: int, deadline: float
) -> Any:
    url = f"http://127.0.0.1:{_port()}"
    with processes() as procs:
        command = [langgraph, "dev", "--no-browser", "--no-reload", "--port", url.rsplit(":")[-1]]
        command += ["--n-jobs-per-worker", str(concurrency)]  # as many runs at once as ours
        procs.append(
            subprocess.Popen(
                [*command, "--config", str(config)],
                cwd=project,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                text=True,
            )
        )
        _wait_for(url, procs[0])
        pids = {"langgraph dev": procs[0].pid}
        return asyncio.run(burst(url, None, pids, clients, deadline))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=100, help="the worker's tasks")
    parser.add_argument("--model-seconds", type=float, default=0.5, help="the answer's time")
    parser.add_argument("--tokens", type=int, default=20, help="tokens in the model's answer")
    parser.add_argument("--deadline", type=float, default=300, help="seconds per burst")
    parser.add_argument("--langgraph", default="/work/refvenv/bin/langgraph")
    parser.add_argument("--skip-reference", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results: dict[str, Any] = {
        "worker_concurrency": args.concurrency,
        "model_seconds": args.model_seconds,
        "tokens": args.tokens,
    }
    with tempfile.TemporaryDirectory(prefix="ws-bench-serve-") as tmp:
        project = Path(tmp)
        graph = GRAPH.replace("{model_s}", repr(args.model_seconds))
        (project / "agent.py").write_text(graph.replace("{tokens}", str(max(args.tokens, 1))))
        config = project / "langgraph.json"
        config.write_text(
            json.dumps({"dependencies": ["."], "graphs": {"chat": "./agent.py:graph"}})
        )
        results["waystone"] = waystone(
            project, config, args.concurrency, args.clients, args.deadline
        )
        if not args.skip_reference:
            results["langgraph dev"] = reference(
                args.langgraph, project, config, args.concurrency, args.clients, args.deadline
            )
    if args.json:
        print(json.dumps(results))
        return 0
    for name in ("waystone", "langgraph dev"):
        if name in results:
            r = results[name]
            f, t = r["first_event_ms"], r["first_token_ms"]
            print(
                f"{name:14} {r['completed']}/{r['clients']} streams, {r['errors']} errors   "
                f"{r['events_per_s']} events/s ({r['events']} in {r['wall_s']} s)"
            )
            print(f"    first event p50 {f['p50']} ms  p95 {f['p95']} ms  max {f['max']} ms")
            print(f"    first token p50 {t['p50']} ms  p95 {t['p95']} ms  max {t['max']} ms")
            print("    CPU s: " + ", ".join(f"{k} {v}" for k, v in r["cpu_s"].items()))
            if r["first_error"]:
                print(f"    first error: {r['first_error']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
