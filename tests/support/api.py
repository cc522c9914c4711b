"""A real ``waystone api`` process for a test, on a free port: what a module serves
(``ApiSetup``, for the ``api`` and ``lg`` fixtures) and its official client."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from tests.conftest import ROOT

TOKEN = "api-token-for-tests"  # WAYSTONE_API_TOKEN of the API tests' servers


@dataclass(frozen=True)
class ApiSetup:
    """What a module's ``waystone api`` serves: its variables (``WAYSTONE_GRAPHS`` and the
    like, given to its worker too), the token it takes, and the arguments of a worker
    started with it (None: the test starts its own, or none)."""

    env: dict[str, str] = field(default_factory=dict)
    token: str = TOKEN
    worker: tuple[str, ...] | None = ()


def piped(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """A server process started from the tree's root, its output read by the test (the
    first line says where it listens)."""
    return subprocess.Popen(
        args, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@contextmanager
def api_server(env: dict[str, str]) -> Iterator[str]:
    """``waystone api --port 0`` with ``env``, until the block ends: its URL."""
    proc = piped([sys.executable, "-m", "waystone", "api", "--port", "0", "--json"], env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else "no output"
        yield json.loads(line)["url"]
    finally:
        proc.terminate()
        proc.communicate(timeout=30)  # its pipes closed with it


@contextmanager
def api_client(env: dict[str, str], token: str = TOKEN) -> Iterator[SyncLangGraphClient]:
    """A ``waystone api`` with ``env`` and ``token`` and its official client, until the
    block ends."""
    with (
        api_server({**env, "WAYSTONE_API_TOKEN": token}) as url,
        get_sync_client(url=url, api_key=token) as client,
    ):
        yield client
