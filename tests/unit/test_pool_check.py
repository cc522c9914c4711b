"""The pool's cheap check tells a socket with something to read (a server that went away
sends its goodbye, then EOF) from a quiet one, for any descriptor number (select() fails
at 1024 and above)."""

from __future__ import annotations

import os
import resource
import socket

from waystone._db.database import _readable


def test_readable_for_any_descriptor_number() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2048 and (hard == resource.RLIM_INFINITY or hard >= 2048):
        resource.setrlimit(resource.RLIMIT_NOFILE, (2048, hard))
    ours, peer = socket.socketpair()
    high = 1500
    os.dup2(ours.fileno(), high)
    try:
        assert _readable(high) is False  # quiet: no round trip needed
        peer.sendall(b"FATAL")
        assert _readable(high) is True
        assert _readable(ours.fileno()) is True
    finally:
        os.close(high)
        ours.close()
        peer.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
