"""``waystone db status|stop``: the embedded Postgres a command starts under WAYSTONE_HOME
(default ``./.waystone``) when no database URL is given, and leaves running for the next."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from waystone.cli.app import DbOpt, JsonOpt, app, emit, guard, out
from waystone.cli.readable import ReadableGroup

db_app = typer.Typer(
    cls=ReadableGroup,
    help="The embedded Postgres under WAYSTONE_HOME: is it running, stop it.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)
app.add_typer(db_app, name="db")

HomeOpt = Annotated[
    Path | None,
    typer.Option(
        "--home",
        envvar="WAYSTONE_HOME",
        help="The directory the server lives in (default: ./.waystone).",
        show_default=False,
    ),
]


def _home(home: Path | None) -> Path:
    return home if home is not None else Path(".waystone")


@db_app.command("status")
def db_status(home: HomeOpt = None, as_json: JsonOpt = False, database_url: DbOpt = None) -> None:
    """Whether the embedded Postgres under the home runs: its process, data and URL."""
    from waystone._db import embedded

    def body() -> None:
        info = embedded.server_info(_home(home))
        data = {**info.to_dict(), "database_url_set": bool(database_url)}

        def render() -> None:
            if info.running:
                out.print(
                    f"running: pid {info.pid} since {info.started_at:%Y-%m-%d %H:%M:%S} UTC, "
                    f"data {info.pgdata}\n  url: {info.url}\n  stop it: `waystone db stop`",
                    highlight=False,
                )
            else:
                out.print(f"not running (data {info.pgdata})", highlight=False)
            if database_url:
                out.print(
                    "  WAYSTONE_DATABASE_URL is set: commands use that database, not this one",
                    highlight=False,
                )

        emit(as_json, data, render)

    guard(body)


@db_app.command("stop")
def db_stop(home: HomeOpt = None, as_json: JsonOpt = False, database_url: DbOpt = None) -> None:
    """Stop the embedded Postgres under the home (its sessions are ended; the next command
    that needs it starts it again). Data is kept."""
    del database_url  # only the embedded server is stopped
    from waystone._db import embedded

    def body() -> None:
        where = _home(home)
        pid = embedded.server_info(where).pid
        stopped = embedded.stop(where)
        data = {"stopped": stopped, "pid": pid, "pgdata": str(embedded.pgdata_path(where))}
        emit(
            as_json,
            data,
            lambda: out.print(
                f"stopped the server (pid {pid})" if stopped else "no server was running",
                highlight=False,
            ),
        )

    guard(body)
