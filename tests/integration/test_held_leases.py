"""The leases an idle ``worker --until-idle`` looks at: a local worker that is gone is seen
first, however many live leases expire sooner than its own."""

from __future__ import annotations

import socket
import subprocess
import sys

from tests.conftest import REFUND_INPUT
from waystone import Runtime
from waystone._runs.registry import _pid_namespace, process_owner

LIVE = 21  # more than an idle worker looks at


def gone_owner() -> str:
    """A worker's name on this machine whose process has ended."""
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return f"{socket.gethostname()}:{_pid_namespace()}:{ended.stdout.strip()}:0badf00d"


def test_a_gone_workers_lease_is_listed_before_live_ones_that_expire_sooner(
    runtime: Runtime,
) -> None:
    live = process_owner()  # this process: alive
    for n in range(LIVE):
        runtime.start("refund", {**REFUND_INPUT, "order_id": f"L-{n}"})
        assert runtime.claim(owner=live) is not None
    left = runtime.start("refund", {**REFUND_INPUT, "order_id": "D-1"}).thread_id
    dead = gone_owner()
    assert runtime.claim(thread_id=left, owner=dead) is not None  # its lease expires last

    held = runtime.held_leases(runtime.names(), limit=20)
    assert len(held) == 20
    assert (held[0].thread_id, held[0].owner, held[0].dead) == (left, dead, True)
    assert not any(x.dead for x in held[1:])
    expiries = [x.expires_at for x in held[1:]]
    assert expiries == sorted(expiries)  # then the soonest to expire
