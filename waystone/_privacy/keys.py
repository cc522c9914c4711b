"""The key that protects personal data: WAYSTONE_ENCRYPTION_KEY (32 random bytes, hex or
base64), or a key generated once under WAYSTONE_HOME when it is unset (fine for one
machine; give every worker the same WAYSTONE_ENCRYPTION_KEY when there are several)."""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from pathlib import Path

from waystone._privacy.seal import Sealer
from waystone.config import parse_key as parse_key


def load_key(home: Path, configured: bytes | None) -> bytes:
    """The vault's key: ``configured`` (``WAYSTONE_ENCRYPTION_KEY``'s), or ``home``'s."""
    if configured is not None:
        return configured
    path = home.expanduser() / "vault.key"
    if path.exists():
        return parse_key(path.read_text())
    path.parent.mkdir(parents=True, exist_ok=True)
    # written whole under another name, then linked into place: two processes starting at
    # once in a new home agree on one key, and neither reads a half-written file
    fd, draft = tempfile.mkstemp(prefix=".vault.key.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32))
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileExistsError):  # another process's key came first
            os.link(draft, path)
    finally:
        os.unlink(draft)
    return parse_key(path.read_text())


def at_rest_sealer(configured: bytes | None) -> Sealer | None:
    """The sealer for encryption at rest: on only when WAYSTONE_ENCRYPTION_KEY is set."""
    return Sealer(configured) if configured is not None else None
