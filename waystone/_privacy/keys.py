"""The key that protects personal data: WAYSTONE_ENCRYPTION_KEY (32 random bytes, hex or
base64), or a key generated once under WAYSTONE_HOME when it is unset (fine for one
machine; give every worker the same WAYSTONE_ENCRYPTION_KEY when there are several)."""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import secrets
import tempfile
from pathlib import Path

from waystone._privacy.seal import Sealer
from waystone.errors import BadInput


def parse_key(text: str) -> bytes:
    raw = text.strip()
    for decode in (bytes.fromhex, base64.b64decode):
        try:
            key = decode(raw)
        except (ValueError, binascii.Error):
            continue
        if len(key) == 32:
            return key
    raise BadInput(
        "WAYSTONE_ENCRYPTION_KEY must be 32 random bytes, hex- or base64-encoded "
        "(e.g. `python -c 'import secrets; print(secrets.token_hex(32))'`)"
    )


def load_key(home: Path) -> bytes:
    configured = os.environ.get("WAYSTONE_ENCRYPTION_KEY")
    if configured:
        return parse_key(configured)
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


def at_rest_sealer() -> Sealer | None:
    """The sealer for encryption at rest: on only when WAYSTONE_ENCRYPTION_KEY is set."""
    configured = os.environ.get("WAYSTONE_ENCRYPTION_KEY")
    return Sealer(parse_key(configured)) if configured else None
