"""Shared fixtures: a real Postgres (embedded, or WAYSTONE_DATABASE_URL), a fresh database
per test cloned from a migrated template, and the example payments provider on loopback.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql as pgsql

from tests.support.stopped_agent import URL_VARIABLE, BookingDesk, booking_desk
from waystone._db import embedded
from waystone._db.database import Database
from waystone._db.migrations import migrate
from waystone.cli.agents import default_agents
from waystone.config import Settings
from waystone.examples.provider import ProviderProcess
from waystone.runtime import Runtime

ROOT = Path(__file__).resolve().parent.parent

# One WAYSTONE_HOME, and so one vault key, for every process of this test session (the CLI
# subprocesses, workers, notebook kernels and in-process runtimes), as one deployment
# shares one key. Encryption at rest (WAYSTONE_ENCRYPTION_KEY) is off unless a test sets it.
_HOME = Path("/tmp") / f"ws-home-{uuid.uuid4().hex[:8]}"
_HOME.mkdir()
(_HOME / "vault.key").write_text("cd" * 32)
os.environ["WAYSTONE_HOME"] = str(_HOME)
os.environ.pop("WAYSTONE_ENCRYPTION_KEY", None)


def _with_dbname(url: str, dbname: str) -> str:
    info = psycopg.conninfo.conninfo_to_dict(url)
    info["dbname"] = dbname
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items()})


@pytest.fixture(scope="session")
def pg_admin_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A superuser URL on a real Postgres: WAYSTONE_DATABASE_URL's, or a fresh embedded one."""
    given = os.environ.get("WAYSTONE_DATABASE_URL")
    if given:
        yield given
        return
    home = Path("/tmp") / f"ws-test-{uuid.uuid4().hex[:8]}"  # short: unix socket path limit
    home.mkdir()
    url = embedded.ensure_server(home)
    try:
        yield url
    finally:
        embedded.stop(home)
        subprocess.run(["rm", "-rf", str(home)], check=False)


@pytest.fixture(scope="session")
def template_db(pg_admin_url: str) -> Iterator[str]:
    """A database migrated once; each test gets a copy."""
    name = f"ws_tpl_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(name)))
    db = Database.open(Settings(database_url=_with_dbname(pg_admin_url, name)))
    try:
        migrate(db)
    finally:
        db.close()
    yield name
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(
            pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(pgsql.Identifier(name))
        )


@pytest.fixture
def database_url(pg_admin_url: str, template_db: str) -> Iterator[str]:
    """A fresh, migrated database for this test alone."""
    name = f"ws_t_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(
            pgsql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                pgsql.Identifier(name), pgsql.Identifier(template_db)
            )
        )
    yield _with_dbname(pg_admin_url, name)
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(
            pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(pgsql.Identifier(name))
        )


@pytest.fixture
def empty_database_url(pg_admin_url: str) -> Iterator[str]:
    """A fresh database with no schema at all."""
    name = f"ws_e_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(name)))
    yield _with_dbname(pg_admin_url, name)
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(
            pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(pgsql.Identifier(name))
        )


@pytest.fixture
def provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ProviderProcess]:
    """The example payments provider, a real process on loopback, found by the agent."""
    with ProviderProcess.start(tmp_path / "payments.sqlite3") as proc:
        monkeypatch.setenv("WAYSTONE_PAYMENTS_URL", proc.url)
        yield proc


@pytest.fixture
def runtime(database_url: str) -> Iterator[Runtime]:
    with Runtime(Settings(database_url=database_url), default_agents) as rt:
        yield rt


@pytest.fixture
def sql(database_url: str) -> Iterator[psycopg.Connection[Any]]:
    """A raw autocommit connection to the test database, for assertions."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        yield conn


class Cli:
    """The real ``waystone`` command in a subprocess, pointed at the test database."""

    def __init__(self, database_url: str, payments_url: str | None, home: Path) -> None:
        del home  # the session's WAYSTONE_HOME: one vault key for every process
        self.env = {
            **os.environ,
            "WAYSTONE_DATABASE_URL": database_url,
            "WAYSTONE_ACTOR": "tester",
        }
        if payments_url:
            self.env["WAYSTONE_PAYMENTS_URL"] = payments_url

    def __call__(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        input: str | None = None,
        timeout: float = 90,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "waystone", *args],
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            input=input,
            cwd=ROOT,
        )


@pytest.fixture
def cli(database_url: str, provider: ProviderProcess, tmp_path: Path) -> Cli:
    return Cli(database_url, provider.url, tmp_path / "home")


def wait_until(check: Callable[[], bool], what: str, timeout: float = 60) -> None:
    """Poll a condition (on the database, a process) until it holds; never a fixed sleep."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        time.sleep(0.05)


REFUND_INPUT = {
    "order_id": "1001",
    "amount": "120.00",
    "currency": "EUR",
    "email": "ana@example.com",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every acceptance test is ``slow``: ``-m "not slow"`` is the quick loop (unit and
    integration on real Postgres); CI runs everything."""
    acceptance = ROOT / "tests" / "acceptance"
    for item in items:
        if acceptance in item.path.parents:
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def rt_agents() -> Mapping[str, Any] | None:
    """The agents ``rt`` serves (None: the default ones); a module overrides this fixture."""
    return None


@pytest.fixture
def rt_graphs() -> Mapping[str, Any] | None:
    """The graphs ``rt`` serves beside its agents; a module overrides this fixture."""
    return None


@pytest.fixture
def rt(
    database_url: str, rt_agents: Mapping[str, Any] | None, rt_graphs: Mapping[str, Any] | None
) -> Iterator[Runtime]:
    """A Runtime on the test's database serving the module's ``rt_agents`` and ``rt_graphs``."""
    with Runtime(Settings(database_url=database_url), rt_agents, graphs=rt_graphs) as made:
        yield made


ENCRYPTION_KEY = "3c" * 32  # WAYSTONE_ENCRYPTION_KEY of the tests that seal


@pytest.fixture
def sealed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Encryption at rest on, as for the runtime: the key in the environment."""
    monkeypatch.setenv("WAYSTONE_ENCRYPTION_KEY", ENCRYPTION_KEY)


@pytest.fixture
def gates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder a gated run (tests.support.gated) notes in and waits on, for every process."""
    folder = tmp_path / "gates"
    folder.mkdir()
    monkeypatch.setenv("WAYSTONE_TEST_GATES", str(folder))
    return folder


@pytest.fixture
def desk(monkeypatch: pytest.MonkeyPatch) -> Iterator[BookingDesk]:
    """The booking provider that holds each call (tests.support.stopped_agent), on loopback."""
    with booking_desk() as made:
        monkeypatch.setenv(URL_VARIABLE, made.url)
        yield made
