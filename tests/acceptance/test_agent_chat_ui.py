"""LangChain's Agent Chat UI, unmodified (``tests.support.chat_app``), in headless Chromium
against a real ``waystone api`` and worker serving ``tests.support.token_chat``: in both
of the app's ways to reach a server, the browser calling the API directly (cross-origin)
and through the app's own server-side proxy (``/api``).

What a person does, and what the reference server (``langgraph dev``) shows for it with
this app: a message's answer grows on the page while the node is still running; the
UI's review view shows an ``interrupt()`` and answers it; "Refresh" regenerates the answer
from the checkpoint before it; "Cancel" stops the UI's stream, and the run goes on to its
end, as the ``on_disconnect: "continue"`` the app sends with ``stream_resumable`` asks;
a reload mid-answer shows the thread, and once the run ends the answer is there once; the
sidebar lists the thread. The app does not set ``useStream``'s ``reconnectOnMount``, so
neither its Cancel nor a reload calls the server about the run.

``WAYSTONE_CHATUI_REFERENCE=/path/to/langgraph`` (a ``langgraph-cli[inmem]`` install) runs
the same test against ``langgraph dev`` serving the same graph instead of Waystone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
from langgraph_sdk import get_sync_client
from psycopg import sql as pgsql

from tests.conftest import ROOT, _with_dbname, wait_until
from tests.support.api import TOKEN, api_server
from tests.support.browser import chromium
from tests.support.chat_app import chat_app, free_port
from tests.support.token_chat import WORDS, gate_name

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Response

pytestmark = pytest.mark.timeout(1800)  # installs the app and compiles it twice

GRAPH = "chat"
LANGGRAPH_JSON = {"graphs": {GRAPH: "tests.support.token_chat:graph"}, "dependencies": ["."]}
REFERENCE = "WAYSTONE_CHATUI_REFERENCE"  # read by this test only
WAIT_MS = 30_000  # a step the page shows; the app is compiled before the cases run


@dataclass
class Server:
    """The server the app talks to: its URL, and the folder its graph's gates are in."""

    url: str
    gates: Path

    def runs(self, thread_id: str) -> list[str]:
        """The thread's runs' statuses, oldest first, as the server API reports them."""
        with get_sync_client(url=self.url, api_key=TOKEN) as client:
            runs = client.runs.list(thread_id)
        return [r["status"] for r in sorted(runs, key=lambda r: r["created_at"])]

    def thread_status(self, thread_id: str) -> str:
        with get_sync_client(url=self.url, api_key=TOKEN) as client:
            return str(client.threads.get(thread_id)["status"])

    def open(self, text: str) -> None:
        """Let the model say the last word of its answer to ``text``."""
        (self.gates / gate_name(text)).touch()


@contextmanager
def _database(pg_admin_url: str, template_db: str) -> Iterator[str]:
    name = f"ws_t_{uuid.uuid4().hex[:10]}"
    create = pgsql.SQL("CREATE DATABASE {} TEMPLATE {}")
    drop = pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(create.format(pgsql.Identifier(name), pgsql.Identifier(template_db)))
    try:
        yield _with_dbname(pg_admin_url, name)
    finally:
        with psycopg.connect(pg_admin_url, autocommit=True) as conn:
            conn.execute(drop.format(pgsql.Identifier(name)))


@contextmanager
def _waystone(env: dict[str, str], logs: Path) -> Iterator[str]:
    """``waystone api`` and one worker with ``env``: the API's URL."""
    with (logs / "worker.out").open("w") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "waystone", "worker", "--json"],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        with api_server(env) as url:
            yield url
    finally:
        worker.kill()
        worker.wait()


@contextmanager
def _langgraph_dev(cli: str, env: dict[str, str], config: Path) -> Iterator[str]:
    """``langgraph dev`` (the reference server) with ``env``, in the config's folder (where
    it keeps its state): its URL."""
    port = free_port()
    log = config.parent / "langgraph-dev.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                cli,
                "dev",
                "--port",
                str(port),
                "--no-browser",
                "--no-reload",
                "--config",
                str(config),
            ],
            env=env,
            cwd=config.parent,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        if proc.poll() is not None:
            raise AssertionError("langgraph dev ended:\n" + log.read_text())
        try:
            with get_sync_client(url=url) as client:
                client.http.get("/info")
            return True
        except Exception:  # not listening yet
            return False

    try:
        wait_until(up, "langgraph dev listening", timeout=120)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def server(
    pg_admin_url: str, template_db: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """The server of the chat graph, Waystone's (or the reference's, see the module's doc)."""
    folder = tmp_path_factory.mktemp("chatui-server")
    gates = folder / "gates"
    gates.mkdir()
    config = folder / "langgraph.json"
    config.write_text(json.dumps(LANGGRAPH_JSON))
    env = {
        **os.environ,
        "WAYSTONE_TEST_GATES": str(gates),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    reference = os.environ.get(REFERENCE)
    if reference:
        with _langgraph_dev(reference, env, config) as url:
            yield Server(url, gates)
        return
    with _database(pg_admin_url, template_db) as database_url:
        env |= {
            "WAYSTONE_DATABASE_URL": database_url,
            "WAYSTONE_LANGGRAPH_JSON": str(config),
            "WAYSTONE_API_TOKEN": TOKEN,
        }
        with _waystone(env, folder) as url:
            yield Server(url, gates)


@pytest.fixture(scope="module", params=["direct", "proxy"])
def app(
    request: pytest.FixtureRequest, server: Server, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    """The app, compiled, set up by its ``.env`` alone for one way to reach the server:
    (that way, its URL)."""
    mode: str = request.param
    port = free_port()
    env = {"NEXT_PUBLIC_ASSISTANT_ID": GRAPH}
    paths: tuple[str, ...] = ("/",)
    if mode == "direct":
        env["NEXT_PUBLIC_API_URL"] = server.url
    else:
        paths += ("/api/info",)  # the proxy's route
        env |= {
            "NEXT_PUBLIC_API_URL": f"http://127.0.0.1:{port}/api",
            "LANGGRAPH_API_URL": server.url,
            "LANGSMITH_API_KEY": TOKEN,
        }
    folder = tmp_path_factory.mktemp(f"chatui-{mode}") / "app"
    with chat_app(folder, port, env, paths) as url:
        yield mode, url


@pytest.fixture
def browser() -> Iterator[Browser]:
    with chromium() as made:
        yield made


class Chat:
    """The app in one browser page, as a person uses it."""

    def __init__(self, browser: Browser, mode: str, url: str) -> None:
        # A large screen, where the sidebar is beside the chat. Calling the API directly,
        # the key a person types into the app's setup form is in the browser's storage.
        self.context = browser.new_context(viewport={"width": 1400, "height": 900})
        if mode == "direct":
            self.context.add_init_script(f"localStorage.setItem('lg:chat:apiKey', '{TOKEN}')")
        self.page: Page = self.context.new_page()
        self.url = url
        self.page.set_default_timeout(WAIT_MS)
        self.refused: list[str] = []  # the server's calls that failed, for a failure's message
        self.page.on("response", self._answered)
        self.page.on(
            "requestfailed",
            lambda r: self.refused.append(f"{r.failure} {r.method} {r.url}"),
        )

    def _answered(self, response: Response) -> None:
        if response.status >= 400:
            self.refused.append(f"{response.status} {response.request.method} {response.url}")

    def open(self, query: str = "") -> None:
        self.page.goto(self.url + "/" + query)
        self.page.locator("textarea").wait_for()

    def send(self, text: str) -> None:
        self.page.fill("textarea", text)
        self.page.keyboard.press("Enter")

    def shows(self, text: str) -> None:
        self.page.get_by_text(text).first.wait_for()

    def idle(self) -> None:
        """Waits until the chat takes a new message (no answer streaming)."""
        self.page.get_by_role("button", name="Send", exact=True).wait_for()

    def times(self, text: str) -> int:
        """How many times ``text`` is on the page."""
        return self.page.locator("body").inner_text().count(text)

    @property
    def thread_id(self) -> str:
        return self.page.url.split("threadId=")[1].split("&")[0]


def answer(n: int, text: str) -> str:
    return f"Answer {n} to {text}: {WORDS}"


def partial(text: str) -> str:
    """The first answer to ``text`` without its last two words."""
    return answer(1, text).removesuffix(" four five")


def grows(chat: Chat, server: Server, text: str) -> None:
    """The answer is on the page in part while its node still runs (held before its last
    word), then whole, once."""
    chat.open()
    chat.send(text)
    chat.shows(partial(text))
    assert chat.times(answer(1, text)) == 0
    assert server.runs(chat.thread_id) == ["running"]
    server.open(text)
    chat.shows(answer(1, text))
    chat.idle()
    assert chat.times(answer(1, text)) == 1
    wait_until(lambda: server.runs(chat.thread_id) == ["success"], "the run done")


def interrupts(chat: Chat, server: Server, text: str) -> None:
    """The UI's review view shows the interrupt; its Approve resumes the run."""
    text = f"approve {text}"  # the graph asks a person first
    approved = f"approved {text}"
    server.open(approved)
    chat.open()
    chat.send(text)
    approve = chat.page.get_by_role("button", name="Approve", exact=True)
    approve.wait_for()
    chat.shows("send_reply")  # the action the graph asks about
    chat.idle()
    assert server.thread_status(chat.thread_id) == "interrupted"
    approve.click()
    chat.shows(answer(1, approved))
    chat.idle()
    assert chat.times(answer(1, approved)) == 1
    wait_until(lambda: server.thread_status(chat.thread_id) == "idle", "the thread answered")


def regenerates(chat: Chat, server: Server, text: str) -> None:
    """Refresh answers again from the checkpoint before the answer: the new answer
    replaces the first on the page."""
    server.open(text)
    chat.open()
    chat.send(text)
    chat.shows(answer(1, text))
    chat.idle()
    chat.page.get_by_text(answer(1, text)).first.hover()
    chat.page.get_by_role("button", name="Refresh").last.click()
    chat.shows(answer(2, text))
    chat.idle()
    assert chat.times(answer(2, text)) == 1 and chat.times(answer(1, text)) == 0
    wait_until(lambda: server.runs(chat.thread_id) == ["success"] * 2, "the second run")


def stops(chat: Chat, server: Server, text: str) -> None:
    """Cancel stops the page's stream mid-answer; the run goes on (the app sent
    ``on_disconnect: "continue"``) and its answer is the thread's."""
    chat.open()
    chat.send(text)
    chat.shows(partial(text))
    chat.page.get_by_role("button", name="Cancel", exact=True).click()
    chat.idle()
    assert chat.times(answer(1, text)) == 0
    assert server.runs(chat.thread_id) == ["running"]
    server.open(text)
    wait_until(lambda: server.runs(chat.thread_id) == ["success"], "the run done")
    chat.page.reload()
    chat.shows(answer(1, text))
    assert chat.times(answer(1, text)) == 1


def reloads(chat: Chat, server: Server, text: str) -> None:
    """A reload mid-answer shows the thread; once the run ends, the answer is there once."""
    chat.open()
    chat.send(text)
    chat.shows(partial(text))
    chat.page.reload()
    chat.page.locator("p.whitespace-pre-wrap", has_text=text).wait_for()  # the question
    server.open(text)
    wait_until(lambda: server.runs(chat.thread_id) == ["success"], "the run done")
    chat.page.reload()
    chat.shows(answer(1, text))
    assert chat.times(answer(1, text)) == 1


def listed(chat: Chat, server: Server, text: str) -> None:
    """The sidebar (thread history) lists a thread by its first message."""
    server.open(text)
    chat.open()
    chat.send(text)
    chat.shows(answer(1, text))
    chat.idle()
    thread_id = chat.thread_id
    chat.open(f"?threadId={thread_id}&chatHistoryOpen=true")
    chat.page.get_by_role("button", name=text, exact=True).wait_for()


CASES: list[Callable[[Chat, Server, str], None]] = [
    grows,
    interrupts,
    regenerates,
    stops,
    reloads,
    listed,
]


def test_agent_chat_ui(app: tuple[str, str], server: Server, browser: Browser) -> None:
    """Each case in a page of its own, on a thread of its own; every case is run, and
    the failures are reported together."""
    mode, url = app
    failed: dict[str, Any] = {}
    for case in CASES:
        chat = Chat(browser, mode, url)
        try:
            case(chat, server, f"{case.__name__} {mode} {uuid.uuid4().hex[:6]}")
        except Exception as exc:  # every case runs, whichever failed before it
            failed[case.__name__] = (exc, chat.refused)
        finally:
            chat.context.close()
    assert not failed, "\n".join(
        f"{name}: {exc!r}; calls failed: {calls}" for name, (exc, calls) in failed.items()
    )
