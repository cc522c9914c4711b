"""LangChain's Agent Chat UI (a Next.js app), unmodified, run with ``next dev`` for a test.

The app's copy is ``../shared/clients/agent-chat-ui`` beside the repository. Its packages
are installed once per version of the app (its files' digest) into a cache folder outside
the repository, with pnpm and the app's own lock; each test's app is a hard-linked copy of
that install with only its ``.env`` written. ``next dev``, not a production build: the
build downloads a web font these machines cannot reach, and dev mode falls back."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# beside the checkout, or where the workplace keeps it for a clone made elsewhere
PLACES = [ROOT.parent / "shared" / "clients", Path("/work/shared/clients")]
SOURCE = next((p / "agent-chat-ui" for p in PLACES if p.is_dir()), PLACES[0] / "agent-chat-ui")
PNPM = "pnpm@10.5.1"  # the app's packageManager
NEXT = "node_modules/next/dist/bin/next"  # run by node: pnpm's shims name the install's path
INSTALL_LIMIT_S = 900.0
COMPILE_LIMIT_S = 600.0  # next dev compiles the page on its first request


def _digest(folder: Path) -> str:
    """The app's version: a digest of its files' paths and contents."""
    sha = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        sha.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return sha.hexdigest()[:16]


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "waystone-tests"


def installed() -> Path:
    """The app with its packages installed, cached by version (installs the first time)."""
    if not (SOURCE / "package.json").is_file():
        raise AssertionError(f"{SOURCE} is missing: the Agent Chat UI's copy goes there")
    root = _cache_root()
    root.mkdir(parents=True, exist_ok=True)
    done = root / f"agent-chat-ui-{_digest(SOURCE)}"
    with (root / "agent-chat-ui.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one install at a time, xdist workers included
        if (done / NEXT).exists():
            return done
        work = done.with_name(done.name + ".partial")
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(SOURCE, work)
        for path in [work, *work.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)  # the source copy is read-only
        done_install = subprocess.run(
            ["npx", "-y", PNPM, "install", "--frozen-lockfile"],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=INSTALL_LIMIT_S,
            env={**os.environ, "CI": "true"},
        )
        if done_install.returncode:
            raise AssertionError(
                f"the app's packages did not install (from the npm registry):\n"
                f"{done_install.stdout[-3000:]}{done_install.stderr[-3000:]}"
            )
        shutil.rmtree(done, ignore_errors=True)
        work.rename(done)
        return done


def _link(source: str, target: str) -> None:
    """A hard link (the install is large), or a copy across file systems."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=COMPILE_LIMIT_S) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, ConnectionError):
        return False


@contextmanager
def chat_app(
    folder: Path, port: int, env: dict[str, str], paths: tuple[str, ...] = ("/",)
) -> Iterator[str]:
    """The app in ``folder`` (a copy of the install) with ``env`` as its ``.env``, served by
    ``next dev`` on 127.0.0.1:``port``, with ``paths`` compiled (next dev compiles a route
    on its first request): its URL."""
    shutil.copytree(installed(), folder, copy_function=_link, symlinks=True)
    (folder / ".env").write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    log = (folder / "next-dev.log").open("w")
    proc = subprocess.Popen(
        ["node", NEXT, "dev", "-H", "127.0.0.1", "-p", str(port)],
        cwd=folder,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "NEXT_TELEMETRY_DISABLED": "1"},
        start_new_session=True,  # next dev starts workers: stopped as a group
    )
    log.close()
    url = f"http://127.0.0.1:{port}"
    # the test process's helper; the module alone (scripts/test.sh) imports no conftest
    from tests.conftest import wait_until

    try:
        for path in paths:

            def served(path: str = path) -> bool:
                return proc.poll() is not None or _answers(url + path)

            wait_until(served, f"next dev serving {path}", timeout=COMPILE_LIMIT_S)
            if proc.poll() is not None:
                raise AssertionError("next dev ended:\n" + (folder / "next-dev.log").read_text())
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


if __name__ == "__main__":  # scripts/test.sh installs the app before the suite runs
    if SOURCE.is_dir():
        print("Agent Chat UI installed:", installed())
    else:
        print(f"{SOURCE} is missing: its test will fail")
