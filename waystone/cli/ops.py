"""The commands that run and look after a deployment: ``worker``, ``dashboard``, ``serve``,
``prune``, ``demo`` and ``debug crash-points``. The run commands are in the package's
``__init__``, with the options and helpers every command shares."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import typer

from waystone._crash import CRASH_POINTS
from waystone.cli.app import (
    DbOpt,
    JsonOpt,
    actor,
    app,
    confirm_or_default,
    debug_app,
    emit,
    guard,
    open_runtime,
    out,
)
from waystone.cli.render import render_history, render_status
from waystone.config import Settings
from waystone.errors import BadInput, WaystoneError


@app.command()
def worker(
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency", min=1, envvar="WAYSTONE_CONCURRENCY", help="Runs driven at once."
        ),
    ] = 1,
    lease_seconds: Annotated[
        float | None,
        typer.Option(
            "--lease-seconds",
            min=0.5,
            envvar="WAYSTONE_LEASE_SECONDS",
            help="Lease length (heartbeats renew it).",
        ),
    ] = None,
    name: Annotated[str | None, typer.Option("--name", envvar="WAYSTONE_WORKER_NAME")] = None,
    agents: Annotated[
        list[str] | None,
        typer.Option(
            "--agent",
            envvar="WAYSTONE_WORKER_AGENTS",
            help="Claim only this agent's runs (repeat for more); default: every agent loaded.",
        ),
    ] = None,
    until_idle: Annotated[
        bool,
        typer.Option(
            "--until-idle", envvar="WAYSTONE_UNTIL_IDLE", help="Exit 0 once nothing is runnable."
        ),
    ] = False,
    poll_seconds: Annotated[
        float,
        typer.Option(
            "--poll-seconds",
            min=0.1,
            envvar="WAYSTONE_POLL_SECONDS",
            help="Fallback poll when no NOTIFY arrives.",
        ),
    ] = 5.0,
    use_async: Annotated[
        bool,
        typer.Option(
            "--async",
            envvar="WAYSTONE_WORKER_ASYNC",
            help="Drive the runs as tasks on one event loop (graphs with async nodes); "
            "--concurrency is then tasks, not threads.",
        ),
    ] = False,
    as_json: JsonOpt = False,
    database_url: DbOpt = None,
) -> None:
    """Claim runnable runs, drive them, release them (SIGTERM: finish the step and stop)."""
    import logging

    from waystone import logs
    from waystone.cli.agents import default_agents
    from waystone.runtime import Runtime
    from waystone.worker.sync import Worker

    kind = Worker
    if use_async:
        from waystone.worker.aio import AsyncWorker

        kind = AsyncWorker

    def body() -> None:
        logs.configure()  # each line about a run carries its thread_id
        try:
            settings = Settings.from_env(database_url=database_url, lease_seconds=lease_seconds)
        except ValueError as exc:
            raise BadInput(str(exc)) from exc
        with Runtime(settings, default_agents) as rt:
            for handler in logging.getLogger().handlers:
                handler.addFilter(rt.log_filter())  # no personal data in the logs
            try:
                w = kind(
                    rt,
                    concurrency=concurrency,
                    name=name,
                    until_idle=until_idle,
                    poll_seconds=poll_seconds,
                    agents=agents or None,
                )
            except ValueError as exc:
                raise BadInput(f"{exc} (load agents with WAYSTONE_AGENTS)") from exc
            w.install_signal_handlers()
            stats = w.run()
        result = {
            "owner": w.owner,
            "driven": stats.driven,
            "lease_lost": stats.lease_lost,
            "errors": stats.errors,
            "db_outages": stats.db_outages,
            "stuck": stats.stuck,
        }
        emit(
            as_json,
            result,
            lambda: out.print(
                f"worker {w.owner} stopped: drove {stats.driven} run(s), "
                f"{stats.lease_lost} lease(s) lost"
            ),
        )

    guard(body)


@app.command()
def dashboard(
    limit: Annotated[int, typer.Option("--limit", min=1, help="Rows per view.")] = 10,
    as_json: JsonOpt = False,
    database_url: DbOpt = None,
) -> None:
    """Active runs by age, the steps with most retries, time per step, the oldest pending
    approvals and signals, and counts by state."""
    from waystone._runs import dashboard as views

    def body() -> None:
        with open_runtime(database_url) as rt:
            data = views.snapshot(rt, limit=limit)
        emit(as_json, data, lambda: views.render(data, out))

    guard(body)


@app.command("serve")
def serve_cmd(
    host: Annotated[str, typer.Option("--host", envvar="WAYSTONE_HOST")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, envvar="WAYSTONE_PORT")] = 8765,
    allowed_hosts: Annotated[
        str,
        typer.Option(
            "--allowed-hosts",
            envvar="WAYSTONE_ALLOWED_HOSTS",
            help="Comma-separated host names (NAME: any port, NAME:PORT) the server answers "
            "besides the bind host, localhost, 127.0.0.1 and [::1] at its port.",
        ),
    ] = "",
    public_reads: Annotated[
        bool,
        typer.Option(
            "--public-reads",
            envvar="WAYSTONE_PUBLIC_READS",
            help="Let anyone who reaches the server read runs (a read-only dashboard); "
            "changes still need the token.",
        ),
    ] = False,
    read_timeout: Annotated[
        float,
        typer.Option(
            "--read-timeout",
            min=0.1,
            envvar="WAYSTONE_READ_TIMEOUT",
            help="Seconds a request may take to arrive; a slower connection is closed.",
        ),
    ] = 10.0,
    as_json: JsonOpt = False,
    database_url: DbOpt = None,
) -> None:
    """Serve the dashboard pages, the LangGraph server API, the operator's JSON API and
    provider webhooks (one ASGI app on uvicorn). With WAYSTONE_API_TOKEN set, reads and
    changes need it (a bearer token; a form login for the pages); without it the server
    is read-only. Once listening it prints its URL (with --json: {"url": ..., "port":
    ...}, the port chosen for --port 0 included)."""
    _serve(
        host, port, allowed_hosts, public_reads, read_timeout, as_json, database_url, "serving on"
    )


@app.command("api")
def api_cmd(
    host: Annotated[str, typer.Option("--host", envvar="WAYSTONE_HOST")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, envvar="WAYSTONE_API_PORT")
    ] = 2024,
    as_json: JsonOpt = False,
    database_url: DbOpt = None,
) -> None:
    """`waystone serve` on port 2024, where LangGraph's clients look for the LangGraph
    server API (what langgraph-sdk and `langgraph dev`'s clients speak): workers drive
    the runs it creates. With WAYSTONE_API_TOKEN (the operator's) or owners' tokens
    (WAYSTONE_API_TOKENS_FILE, WAYSTONE_API_TOKENS) set, every request needs one
    (x-api-key, or a bearer token), and an owner sees its own threads only; without any,
    the API only reads. Once listening it prints its URL (with --json: {"url": ...,
    "port": ...})."""
    hosts = os.environ.get("WAYSTONE_ALLOWED_HOSTS", "")
    _serve(host, port, hosts, False, 10.0, as_json, database_url, "LangGraph API on")


def _serve(
    host: str,
    port: int,
    allowed_hosts: str,
    public_reads: bool,
    read_timeout: float,
    as_json: bool,
    database_url: str | None,
    announced: str,
) -> None:
    import logging

    def body() -> None:
        try:
            from waystone.web.serve import WebServer
        except ImportError:
            raise BadInput(
                "`waystone serve` needs the web extra: pip install 'waystone[web]'"
            ) from None
        from waystone import logs

        logs.configure()
        with open_runtime(database_url) as rt:
            for handler in logging.getLogger().handlers:
                handler.addFilter(rt.log_filter())
            server = WebServer(
                rt,
                host,
                port,
                os.environ.get("WAYSTONE_API_TOKEN") or None,
                hosts=allowed_hosts.split(","),
                public_reads=public_reads,
                read_timeout=read_timeout,
            )
            server.run(_announcer(as_json) or (lambda url: print(announced, url, flush=True)))

    guard(body)


def _announcer(as_json: bool) -> Callable[[str], None] | None:
    """How ``serve`` says where it listens: one JSON object, or the server's own line."""
    if not as_json:
        return None

    def announce(url: str) -> None:
        port = int(urlsplit(url).port or 0)
        emit(True, {"url": url, "port": port}, lambda: None)
        sys.stdout.flush()  # read by whoever waits for the server to listen

    return announce


@app.command()
def prune(
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than",
            envvar="WAYSTONE_RETENTION",
            help="Prune runs that ended longer ago than this (30d, 12h, 2w).",
        ),
    ] = "30d",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list what would go.")] = False,
    as_json: JsonOpt = False,
    database_url: DbOpt = None,
) -> None:
    """Delete the checkpoints of runs that ended before the cutoff; keep their run row,
    events, effect ledger and a compact summary. Active runs are never touched."""
    from waystone._checkpointing import retention

    def body() -> None:
        age = retention.parse_age(older_than)
        with open_runtime(database_url) as rt:
            result = rt.prune(age, dry_run=dry_run)
        verb = "would prune" if dry_run else "pruned"
        emit(
            as_json,
            result,
            lambda: out.print(
                f"{verb} {len(result['runs'])} run(s), {result['checkpoints']} checkpoint(s)"
            ),
        )

    guard(body)


@app.command()
def demo(
    approve_it: Annotated[bool, typer.Option("--approve", help="Approve without asking.")] = False,
    as_json: JsonOpt = False,
    database_url: DbOpt = None,
) -> None:
    """Run the refund agent against the example provider, through an approval, to done."""
    from waystone.examples.provider import ProviderProcess

    def body() -> None:
        with (
            tempfile.TemporaryDirectory(prefix="waystone-demo-") as tmp,
            ProviderProcess.start(Path(tmp) / "payments.sqlite3") as provider,
            open_runtime(database_url, migrate=True) as rt,  # a demo makes what it needs
        ):
            os.environ["WAYSTONE_PAYMENTS_URL"] = provider.url

            def say(text: str) -> None:
                if not as_json:
                    out.print(text, highlight=False)

            say(f"payments provider on {provider.url}; database {rt.database_url}")
            started = rt.start(
                "refund",
                {
                    "order_id": "1001",
                    "amount": "120.00",
                    "currency": "EUR",
                    "email": "ana@example.com",
                },
            )
            say(f"started {started.thread_id}: {started.goal}")
            waiting = rt.run(started.thread_id)
            if not as_json:
                render_status(waiting)
            if waiting.state != "waiting":
                raise WaystoneError(f"expected the run to wait for approval, it is {waiting.state}")
            if not approve_it and not confirm_or_default("Approve this refund?", say):
                final = rt.reject(started.thread_id, by=actor(None), reason="declined in the demo")
            else:
                rt.approve(started.thread_id, by=actor(None), comment="approved in the demo")
                final = rt.run(started.thread_id)
            hist = rt.history(started.thread_id)
            ledger = provider.ledger()
        result = {
            "thread_id": final.thread_id,
            "state": final.state,
            "reason": final.reason,
            "history": hist,
            "provider_ledger": ledger,
        }

        def render() -> None:
            render_history(hist)
            out.print(
                f"provider ledger: {len(ledger['refunds'])} refund(s), "
                f"{len(ledger['notifications'])} notification(s)"
            )
            render_status(final)

        emit(as_json, result, render)

    guard(body)


@debug_app.command("crash-points")
def crash_points(as_json: JsonOpt = False, database_url: DbOpt = None) -> None:
    """List every WAYSTONE_CRASH_AT point."""
    del database_url

    def render() -> None:
        for p in CRASH_POINTS.values():
            suffix = "  (also <point>@<tool>)" if p.per_tool else ""
            out.print(f"{p.name:26} {p.where}{suffix}", highlight=False)

    points = [
        {"name": p.name, "where": p.where, "per_tool": p.per_tool} for p in CRASH_POINTS.values()
    ]
    emit(as_json, {"crash_points": points}, render)
