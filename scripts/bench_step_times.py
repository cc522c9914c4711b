"""What reading the step times costs: the dashboard's (every run) and a run's page's (one
thread), over ``--runs`` done runs of a ``create_react_agent`` whose fake model calls two
tools in one turn (two ``Send`` tasks), as the pages read them.

    python scripts/bench_step_times.py [--runs 200] [--repeat 20] [--json]

Printed: the median milliseconds of ``snapshot()``'s step times over every run and of
``step_times()`` for one run, and whether the one-run query's plan holds a sequential
scan with sequential scans priced out (it should not: it reads by the thread's keys).
Runs on a temporary embedded Postgres, stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import psycopg
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

from waystone import Runtime, Settings
from waystone._db import embedded
from waystone._runs.dashboard import step_times
from waystone.sql import query

CALLS = [
    {"name": "lookup", "args": {"city": "Lyon"}, "id": "call_lookup"},
    {"name": "weather", "args": {"city": "Lyon"}, "id": "call_weather"},
]


class TwoTools(FakeMessagesListChatModel):
    """Calls both tools, then answers once it has their results."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        done = any(isinstance(m, ToolMessage) for m in messages)
        answer = AIMessage("all set") if done else AIMessage("", tool_calls=CALLS)
        return ChatResult(generations=[ChatGeneration(message=answer)])


@tool
def lookup(city: str) -> str:
    """The hotels of a city."""
    return f"hotels in {city}"


@tool
def weather(city: str) -> str:
    """The weather of a city."""
    return f"sunny in {city}"


def agent() -> Any:
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(TwoTools(responses=[AIMessage("")]), [lookup, weather])


def _median_ms(do: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        do()
        times.append((time.perf_counter() - began) * 1000)
    return round(statistics.median(times), 2)


def measure(url: str, runs: int, repeat: int) -> dict[str, Any]:
    with Runtime(Settings(database_url=url), graphs={"trip": agent()}, migrate=True) as rt:
        ask = {"messages": [{"role": "user", "content": "a trip"}]}
        threads = [rt.invoke("trip", ask).thread_id for _ in range(runs)]

        with psycopg.connect(url) as conn:
            conn.execute("SET enable_seqscan = off")
            none: list[str] = []
            sends = dict.fromkeys(
                ("send_threads", "send_namespaces", "send_versions", "send_nodes"), none
            )
            plan = conn.execute(
                "EXPLAIN " + query("step_times_of_thread"),
                {"thread_id": threads[0], "send_positions": [], **sends},
            ).fetchall()
        return {
            "runs": runs,
            "every_run_ms": _median_ms(lambda: step_times(rt), repeat),
            "one_run_ms": _median_ms(lambda: step_times(rt, threads[-1]), repeat),
            "one_run_seq_scan": any("Seq Scan" in row[0] for row in plan),
            "one_run_times": step_times(rt, threads[-1]),
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ws-steps-", dir="/tmp") as home:
        url = embedded.ensure_server(Path(home))
        try:
            report = measure(url, args.runs, args.repeat)
        finally:
            embedded.stop(Path(home))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{report['runs']} runs of a two-tool react agent")
        print(f"  every run's step times (dashboard): {report['every_run_ms']} ms")
        print(f"  one run's step times (its page):    {report['one_run_ms']} ms")
        print(f"  one run's plan has a seq scan:      {report['one_run_seq_scan']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
