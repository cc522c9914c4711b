"""LangGraph's own checkpoint-postgres tests, run with Waystone's saver in place of the stock
one: its fixtures and connections as they come (``prepare_threshold=0`` included), with
``PostgresSaver`` and ``AsyncPostgresSaver`` swapped for Waystone's in every test module.

    python scripts/stock_saver_suite.py [--sdist FILE] [--url ADMIN_URL] [--stock]
        [--sealed] [-- PYTEST_ARGS...]

The tests come from the sdist of the installed ``langgraph-checkpoint-postgres`` (``pip
download``, cached under ``--cache``; or ``--sdist``). They run in a virtualenv of their
own on top of this interpreter's packages (it adds ``pytest-asyncio`` and ``pytest-mock``,
which the suite needs), on ``--url`` (a superuser URL) or a fresh embedded Postgres.
``--stock`` runs them unswapped, for a baseline; ``--sealed`` with encryption at rest on.
The store tests are left out: they test LangGraph's store, not the saver. Needs the
network the first time (package registry only), so it is run on demand, never in CI.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import uuid
from pathlib import Path
from urllib.parse import quote

import psycopg

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "langgraph-checkpoint-postgres"
SAVER_TESTS = (
    "test_sync.py",
    "test_async.py",
    "test_conformance_delta.py",
    "test_delta_pagination.py",
    "test_delta_plain_value_seed.py",
    "test_prune.py",
)
NEEDS = ("pytest-asyncio", "pytest-mock")

# Appended to the suite's conftest: before each test, every test module's names for the
# stock savers point at Waystone's (taking the stock constructors' `pipe=` too).
SWAP = """

import pytest as _pytest
from waystone import AsyncWaystoneSaver as _Async, WaystoneSaver as _Sync


class WaystonePostgresSaver(_Sync):
    def __init__(self, conn, pipe=None, **kwargs):
        super().__init__(conn, pipe=pipe, **kwargs)


class WaystoneAsyncPostgresSaver(_Async):
    def __init__(self, conn, pipe=None, **kwargs):
        super().__init__(conn, **kwargs)


@_pytest.fixture(autouse=True)
def _waystone_swap(monkeypatch):
    import sys

    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("tests.") or module_name == __name__:
            continue  # every test module: test_prune builds savers with test_sync's helpers
        for name, swapped in (
            ("PostgresSaver", WaystonePostgresSaver),
            ("AsyncPostgresSaver", WaystoneAsyncPostgresSaver),
        ):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, swapped)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdist", type=Path, help="the package's sdist (default: download)")
    parser.add_argument("--url", help="a superuser URL (default: a fresh embedded Postgres)")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "waystone-stock")
    parser.add_argument("--stock", action="store_true", help="run the stock savers (baseline)")
    parser.add_argument("--sealed", action="store_true", help="encryption at rest on")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    args = parser.parse_args()

    args.cache.mkdir(parents=True, exist_ok=True)
    sdist = args.sdist or _download(args.cache)
    python = _venv(args.cache)
    work = Path(tempfile.mkdtemp(prefix="stock-saver-"))
    tests = _extract(sdist, work)
    home = work / "home"
    home.mkdir()
    url = args.url or _embedded(work / "pg")
    try:
        return _run(args, sdist, python, work, tests, home, url)
    finally:
        if not args.url:
            from waystone._db import embedded

            embedded.stop(work / "pg")


def _run(
    args: argparse.Namespace,
    sdist: Path,
    python: Path,
    work: Path,
    tests: Path,
    home: Path,
    url: str,
) -> int:
    _point_at(tests, _uri(url), swap=not args.stock)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(work)]),
        "WAYSTONE_HOME": str(home),
    }
    sealed(env, args.sealed)
    command = pytest_command(python, *[str(tests / name) for name in SAVER_TESTS])
    command += args.pytest_args
    print(f"{'stock' if args.stock else 'waystone'} savers, tests of {sdist.name}", flush=True)
    return subprocess.run(command, cwd=work, env=env, check=False).returncode


def sealed(env: dict[str, str], on: bool) -> None:
    """``env`` with encryption at rest on (a fresh key) or off."""
    env.pop("WAYSTONE_ENCRYPTION_KEY", None)
    if on:
        env["WAYSTONE_ENCRYPTION_KEY"] = uuid.uuid4().hex * 2


def pytest_command(python: Path, *args: str) -> list[str]:
    """pytest in the suite's virtualenv, as LangGraph's suites run: asyncio on, one process."""
    options = ["-p", "no:cacheprovider", "-o", "asyncio_mode=auto", "-q", "-n", "0"]
    return [str(python), "-m", "pytest", *options, *args]


def _download(cache: Path, package: str = PACKAGE) -> Path:
    """The sdist of the installed version of ``package``, from the cache or the registry."""
    version = importlib.metadata.version(package)
    name = f"{package.replace('-', '_')}-{version}.tar.gz"
    if not (cache / name).exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", f"{package}=={version}", "--no-deps"]
            + ["--no-binary", ":all:", "-d", str(cache)],
            check=True,
        )
    return cache / name


def _venv(cache: Path, needs: tuple[str, ...] = NEEDS, name: str = "venv") -> Path:
    """A virtualenv seeing this interpreter's packages, plus what the suite needs."""
    venv = cache / name
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run(
            [sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True
        )
        subprocess.run([str(python), "-m", "pip", "install", "-q", *needs], check=True)
    return python


def _extract(sdist: Path, work: Path) -> Path:
    with tarfile.open(sdist) as archive:
        members = [m for m in archive.getmembers() if "/tests/" in m.name]
        archive.extractall(work, members=members, filter="data")
    (tests,) = work.glob("*/tests")
    return tests.rename(work / "tests")


def _embedded(home: Path) -> str:
    from waystone._db import embedded

    home.mkdir()
    return embedded.ensure_server(home)


def _uri(url: str) -> str:
    """``url`` as a URI the suite can append a database name to."""
    info = psycopg.conninfo.conninfo_to_dict(url)
    host = quote(str(info.get("host", "localhost")), safe="")
    port = f":{info['port']}" if info.get("port") else ""
    password = f":{quote(str(info['password']), safe='')}" if info.get("password") else ""
    return f"postgresql://{info.get('user', 'postgres')}{password}@{host}{port}/"


def _point_at(tests: Path, uri: str, *, swap: bool) -> None:
    conftest = tests / "conftest.py"
    text = conftest.read_text()
    text = re.sub(r'DEFAULT_POSTGRES_URI = ".*"', f"DEFAULT_POSTGRES_URI = {uri!r}", text)
    text = re.sub(r'DEFAULT_URI = ".*"', f"DEFAULT_URI = {uri + 'postgres'!r}", text)
    conftest.write_text(text + (SWAP if swap else ""))


if __name__ == "__main__":
    sys.exit(main())
