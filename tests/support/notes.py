"""The benchmarks' do-nothing agent (``scripts/bench_storage.py``) for tests that need a
cheap real run: registered on a runtime, started, and claimed when asked."""

from __future__ import annotations

import sys
from pathlib import Path

from waystone import AgentSpec, Runtime
from waystone._runs.registry import Run

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import bench_storage  # noqa: E402

from tests.support.inside import parts


def registered(runtime: Runtime, actions: int = 1) -> AgentSpec:
    """The agent with ``actions`` actions, registered on ``runtime``."""
    spec = bench_storage.agent(actions)
    runtime.register(spec)
    return spec


def claimed(runtime: Runtime, owner: str = "test") -> Run:
    """A new one-action run, claimed (running, with a lease) but not driven."""
    thread_id = runtime.start(registered(runtime).name, {}).thread_id
    run = parts(runtime).registry.claim(owner=owner, lease_seconds=30, thread_id=thread_id)
    assert run is not None
    return run
