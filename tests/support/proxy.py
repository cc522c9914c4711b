"""A TCP proxy on loopback that holds chosen requests in transit: a slow network.

Each connection is read up to the end of its first request line; if that line starts with
one of the held prefixes and holds are left, nothing reaches the server for ``hold_s``
seconds (the client's bytes wait in the proxy, as in a congested link), then the request
is forwarded as it was sent. Every other connection is forwarded at once.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from types import TracebackType


class DelayingProxy:
    def __init__(self, upstream: tuple[str, int], hold: bytes, hold_s: float, times: int) -> None:
        self.upstream, self.hold, self.hold_s = upstream, hold, hold_s
        self._left = times
        self._lock = threading.Lock()
        self.held = 0  # requests held so far
        self._server = socket.create_server(("127.0.0.1", 0))
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.getsockname()[1]}"

    def __enter__(self) -> DelayingProxy:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._closed.set()
        self._server.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _take_hold(self, first: bytes) -> bool:
        with self._lock:
            if self._left > 0 and first.startswith(self.hold):
                self._left -= 1
                self.held += 1
                return True
        return False

    def _serve(self, client: socket.socket) -> None:
        with client:
            head = b""
            while b"\r\n" not in head and len(head) < 8192:
                chunk = client.recv(4096)
                if not chunk:
                    return
                head += chunk
            if self._take_hold(head):
                time.sleep(self.hold_s)  # the client gave up long ago; the bytes go on
            try:
                server = socket.create_connection(self.upstream, timeout=30)
            except OSError:
                return
            with server:
                server.sendall(head)
                back = threading.Thread(target=_pipe, args=(server, client), daemon=True)
                back.start()
                _pipe(client, server)
                back.join(timeout=30)


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        return
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)
