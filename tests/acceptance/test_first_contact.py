"""What a new user meets first, through the real server and the real command: a port in
use, a load balancer's health check, a run id that the thread does not have."""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path

import pytest

from tests.conftest import REFUND_INPUT, Cli
from tests.support.served import TOKEN, Served
from waystone import Runtime


@pytest.mark.parametrize("command", ["api", "serve"])
def test_a_port_in_use_is_one_line_and_exit_2(
    command: str, database_url: str, tmp_path: Path
) -> None:
    cli = Cli(database_url, None, tmp_path)
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = cli(command, "--port", str(port))
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"error: port {port} is in use (127.0.0.1:{port}): pass --port with a free port "
        "(0: any free one), or stop the process that listens there"
    ]
    assert done.stdout == ""


def test_ok_answers_a_health_check_with_no_token(served: Served) -> None:
    for path in ("/ok", "/ok?check_db=0", "/ok?check_db=1"):
        reply = served.request("GET", path)
        assert (reply.status, reply.json()) == (200, {"ok": True}), path
    wrong = served.request("GET", "/ok?check_db=yes")
    assert (wrong.status, wrong.json()) == (400, {"detail": "check_db must be 0 or 1"})
    assert served.request("GET", "/info").status == 401  # the rest still needs the token
    dialled = {"Host": f"10.0.0.9:{served.port}"}  # what a load balancer's check names
    assert served.request("GET", "/ok", headers=dialled).status == 200
    assert served.request("GET", "/info", headers=dialled, token=TOKEN).status == 400


def test_ok_with_check_db_is_503_once_the_database_is_gone(
    runtime: Runtime, served: Served
) -> None:
    runtime.close()  # its pool closed: this server reaches no database any more
    reply = served.request("GET", "/ok?check_db=1")
    assert (reply.status, reply.json()) == (503, {"detail": "the database is unreachable"})
    assert served.request("GET", "/ok").status == 200  # the process itself still answers


def test_an_unknown_run_on_a_known_thread_is_named(
    served: Served, database_url: str, tmp_path: Path
) -> None:
    made = served.request("POST", "/threads", {}, token=TOKEN)
    assert made.status == 200, made.body
    thread_id = made.json()["thread_id"]
    for method, path in (
        ("GET", f"/threads/{thread_id}/runs/r-404"),
        ("GET", f"/threads/{thread_id}/runs/r-404/join"),
        ("POST", f"/threads/{thread_id}/runs/r-404/cancel"),
    ):
        reply = served.request(method, path, token=TOKEN)
        assert reply.status == 404, (path, reply.body)
        assert reply.json()["detail"] == (
            f"thread '{thread_id}' has no run 'r-404' "
            f"(GET /threads/{thread_id}/runs lists its runs)"
        )
    unknown = served.request("GET", "/threads/no-such-thread/runs/r-404", token=TOKEN)
    assert unknown.status == 404 and "unknown thread 'no-such-thread'" in unknown.body.decode()

    done = Cli(database_url, None, tmp_path)("status", thread_id)
    assert done.returncode == 3
    assert done.stderr.splitlines() == [
        f"error: thread '{thread_id}' has no run yet "
        f"(`waystone start --graph NAME --thread-id {thread_id} --input '{{}}'` starts one)"
    ]


def test_an_unknown_run_on_a_thread_with_runs_is_named(served: Served, runtime: Runtime) -> None:
    thread_id = runtime.start("refund", REFUND_INPUT).thread_id
    reply = served.request("GET", f"/threads/{thread_id}/runs/r-404", token=TOKEN)
    assert reply.status == 404
    assert reply.json()["detail"].startswith(f"thread '{thread_id}' has no run 'r-404'")


def test_the_health_check_waits_briefly_for_a_pooled_connection(
    runtime: Runtime, served: Served
) -> None:
    with contextlib.ExitStack() as held:
        for _ in range(runtime.settings.pool_max_size):  # every connection of the pool
            held.enter_context(runtime.connection())
        assert runtime.database_ok(wait_s=0.2) is False
        reply = served.request("GET", "/ok?check_db=1")
        assert (reply.status, reply.json()) == (503, {"detail": "the database is unreachable"})
    assert runtime.database_ok(wait_s=0.2) is True
    assert served.request("GET", "/ok?check_db=1").status == 200
