"""``waystone serve``: the app of :func:`waystone.web.create_app` on uvicorn, on one
port, with the protections a server on an operator's network needs: the Host names it
answers (the bind host, localhost, 127.0.0.1 and [::1] at its port, and the ones given),
a bounded number of connections, headers of at most 16 KiB, and a read deadline: a
request (its line, headers and body) must arrive within ``read_timeout`` seconds of the
connection opening or of the previous answer, however it trickles in (slowloris)."""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Generator, Sequence
from contextlib import contextmanager
from types import FrameType

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from waystone._runtime.graphs import configured_auth
from waystone.errors import BadInput
from waystone.runtime import Runtime
from waystone.web.gate import TOKEN_ENV
from waystone.web.security import allowed_hosts, parse_allowed_hosts

logger = logging.getLogger(__name__)

READ_TIMEOUT_S = 10.0
KEEP_ALIVE_S = 5.0  # an idle connection between requests
MAX_HEADERS = 16 * 1024  # bytes of a request line and headers
MAX_CONNECTIONS = 512  # beyond it a request gets 503
GRACE_S = 10  # at SIGTERM, for requests in flight; a stream's client resumes by event id


class DeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request's arrival: uvicorn's own
    keep-alive timeout restarts on every byte, so a client that sends one byte a second
    would hold its connection for ever."""

    read_timeout = READ_TIMEOUT_S
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is h11.DONE:  # the whole request is in
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is not h11.DONE:
            self._arm()  # the next request on this connection has its own time

    def send_400_response(self, msg: str) -> None:
        """A request h11 cannot parse (a Content-Length that is not a number, say)."""
        body = json.dumps(
            {"error": f"{msg} Check the request line and headers (Host, Content-Length)."}
        )
        headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
        for event in (
            h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
            h11.Data(data=body.encode()),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event) or b"")
        self.transport.close()

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.read_timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            logger.debug("closing a connection whose request took over %ss", self.read_timeout)
            self.transport.close()


class _Server(uvicorn.Server):
    """Stops on SIGTERM or SIGINT and returns (uvicorn re-raises the signal instead)."""

    @contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def stop(signum: int, frame: FrameType | None) -> None:
            del frame
            logger.info("received %s: stopping", signal.Signals(signum).name)
            self.should_exit = True

        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


class WebServer:
    """The app bound to ``host:port`` (port 0: a free one), not yet serving: :meth:`run`
    serves until SIGTERM or SIGINT; :meth:`start` serves on a thread until :meth:`stop`."""

    def __init__(
        self,
        runtime: Runtime,
        host: str = "127.0.0.1",
        port: int = 8765,
        token: str | None = None,
        *,
        hosts: Sequence[str] = (),
        public_reads: bool = False,
        read_timeout: float = READ_TIMEOUT_S,
    ) -> None:
        from waystone.web import create_app

        try:
            extra = parse_allowed_hosts(hosts)
        except ValueError as exc:
            raise BadInput(f"--allowed-hosts: {exc}") from exc
        if not read_timeout > 0:
            raise BadInput(
                f"the read timeout must be a positive number of seconds, not {read_timeout}"
            )
        self.token = token or None
        self.public_reads = public_reads
        self.custom_auth = configured_auth(runtime.settings) is not None
        max_body = runtime.settings.max_body_bytes
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # bound here, so that the port (--port 0) and the Host names are known
        self.socket = _bind(host, port, family)
        self.port = int(self.socket.getsockname()[1])
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{self.port}"
        answered = allowed_hosts(host, self.port, extra)
        app = create_app(
            runtime,
            token=self.token or "",
            allowed_hosts=[n if p is None else f"{n}:{p}" for n, p in answered],
            public_reads=public_reads,
            max_body=max_body,
        )
        protocol = type("Deadline", (DeadlineProtocol,), {"read_timeout": read_timeout})
        config = uvicorn.Config(
            app,
            http=protocol,
            lifespan="on",  # create_app's: the stream follower stops with the server
            log_config=None,  # the process's logging is `waystone.logs`'s, not uvicorn's
            log_level="warning",
            access_log=False,
            timeout_keep_alive=int(max(1, min(KEEP_ALIVE_S, read_timeout))),
            h11_max_incomplete_event_size=MAX_HEADERS,
            limit_concurrency=MAX_CONNECTIONS,
            timeout_graceful_shutdown=GRACE_S,
        )
        self.server = _Server(config)
        self._thread: threading.Thread | None = None

    def run(self, announce: Callable[[str], None] | None = None) -> None:
        if self.token is None:
            logger.warning(
                "%s is not set: %s read-only, and anyone who reaches it reads runs",
                TOKEN_ENV,
                "the operator's pages are" if self.custom_auth else "the server is",
            )
        elif self.public_reads:
            logger.warning("public reads: anyone who reaches the server reads runs")
        (announce or _print_url)(self.url)
        try:
            self.server.run(sockets=[self.socket])
        finally:
            self.socket.close()

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, args=(lambda url: None,), daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=30)


def serve(
    runtime: Runtime,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    *,
    hosts: Sequence[str] = (),
    public_reads: bool = False,
    read_timeout: float = READ_TIMEOUT_S,
    announce: Callable[[str], None] | None = None,
) -> None:
    """Serve until SIGTERM or SIGINT; once listening, ``announce(url)`` (default: print
    ``serving on URL``). The other options are :class:`WebServer`'s."""
    server = WebServer(
        runtime,
        host,
        port,
        token,
        hosts=hosts,
        public_reads=public_reads,
        read_timeout=read_timeout,
    )
    server.run(announce)


def _bind(host: str, port: int, family: socket.AddressFamily) -> socket.socket:
    """A listening socket on ``host:port``; :class:`BadInput` saying what to do when the
    port is taken or the address cannot be had (an OSError is a traceback to a user)."""
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        if exc.errno == errno.EADDRINUSE:
            raise BadInput(
                f"port {port} is in use ({where}): pass --port with a free port (0: any free "
                "one), or stop the process that listens there"
            ) from None
        if exc.errno == errno.EACCES:
            raise BadInput(
                f"cannot listen on {where}: permission denied (ports below 1024 need "
                "privileges); pass --port with a port above 1023"
            ) from None
        reason = os.strerror(exc.errno) if exc.errno and exc.errno > 0 else str(exc)
        raise BadInput(
            f"cannot listen on {where}: {reason}; check --host (an address of this machine) "
            "and --port"
        ) from None


def _print_url(url: str) -> None:
    sys.stdout.write(f"serving on {url}\n")
    sys.stdout.flush()
