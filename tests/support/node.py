"""Node tests of the JavaScript clients (``tests/js``): their npm packages installed once
per ``package.json`` + lock into a cache outside the repository, and each test file run by
node's test runner against a server, its results read per test from its TAP output."""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

JS = ROOT / "tests" / "js"
NODE_TIMEOUT_S = 600
_RESULT = re.compile(r"^(not ok|ok) \d+ - (.+)$")


def cache_root() -> Path:
    """Where the installs are kept: ``WAYSTONE_JS_CACHE``, else ``~/.cache/waystone-js``."""
    given = os.environ.get("WAYSTONE_JS_CACHE")
    return Path(given) if given else Path.home() / ".cache" / "waystone-js"


def installed() -> Path:
    """The ``node_modules`` of ``tests/js``'s lock, installed by ``npm ci`` the first time
    (one process installs; the others wait on its lock)."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is missing: apt-get install -y nodejs npm; this test never skips")
    files = [JS / "package.json", JS / "package-lock.json"]
    key = hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:16]
    home = cache_root() / key
    home.mkdir(parents=True, exist_ok=True)
    done = home / "node_modules" / ".waystone-installed"
    with (home / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            for f in files:
                shutil.copy(f, home / f.name)
            subprocess.run(
                ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=home,
                check=True,
                timeout=NODE_TIMEOUT_S,
            )
            done.touch()
    return home / "node_modules"


def _websocket_flag() -> list[str]:
    """What gives node the browser's WebSocket (the SDK's WebSocket transport): a flag
    before node 22, nothing since."""
    version = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True)
    major = int(version.stdout.strip().lstrip("v").split(".")[0])
    return ["--experimental-websocket"] if major < 22 else []


def run_tests(name: str, workdir: Path, env: dict[str, str]) -> dict[str, bool]:
    """Run ``tests/js/<name>`` with node's test runner from ``workdir`` (given the cached
    packages): whether each of its tests passed, by name. Its output is printed, for the
    report of a failure."""
    modules = installed()
    (workdir / "node_modules").symlink_to(modules, target_is_directory=True)
    shutil.copy(JS / name, workdir / name)
    done = subprocess.run(
        ["node", *_websocket_flag(), "--test", "--test-reporter=tap", name],
        cwd=workdir,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT_S,
    )
    print(done.stdout[-20000:], done.stderr[-5000:])
    results = {}
    for line in done.stdout.splitlines():
        found = _RESULT.match(line)
        if found:
            results[found.group(2)] = found.group(1) == "ok"
    assert results, f"node ran no test: {done.stderr[-2000:]}"
    return results
