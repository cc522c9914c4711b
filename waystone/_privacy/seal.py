"""Encryption at rest (optional): with WAYSTONE_ENCRYPTION_KEY set, every stored value
that carries content is sealed with AES-GCM before it reaches Postgres.

That covers LangGraph's checkpoint values (blobs, the inline primitives LangGraph would
keep as plain JSONB, and the metadata other than its structural keys), pending writes,
and Waystone's runs, events, signals and effect ledger. Structural fields stay readable
(states, node names, ids, timestamps, idempotency keys, which are hashes). Without the
key a sealed value cannot be read, and the error says so.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Iterable
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from langgraph.checkpoint.serde.base import SerializerProtocol

from waystone.errors import WaystoneError

MARK = "$sealed"
TEXT = "sealed:"
TYPE = "sealed+"


class SealedData(WaystoneError):
    """A sealed value met a process without (the right) key."""

    exit_code = 2


class Sealer:
    def __init__(self, key: bytes) -> None:
        self._aead = AESGCM(hashlib.sha256(b"waystone-at-rest" + key).digest())

    def seal_bytes(self, data: bytes) -> bytes:
        nonce = secrets.token_bytes(12)
        return nonce + self._aead.encrypt(nonce, data, None)

    def open_bytes(self, sealed: bytes) -> bytes:
        try:
            return self._aead.decrypt(sealed[:12], sealed[12:], None)
        except InvalidTag as exc:
            raise SealedData(
                "this value was sealed with another WAYSTONE_ENCRYPTION_KEY; set the key "
                "it was written with"
            ) from exc

    def seal(self, value: Any) -> Any:
        """A JSON value (or text) sealed; ``None`` stays ``None``."""
        if value is None:
            return None
        import json

        raw = json.dumps(value, separators=(",", ":"), default=str).encode()
        token = base64.b64encode(self.seal_bytes(raw)).decode()
        return TEXT + token if isinstance(value, str) else {MARK: token}


def open_value(sealer: Sealer | None, value: Any) -> Any:
    """The value behind a sealed one; unsealed values pass through (written before the
    key was set, or structural)."""
    sealed: str | None = None
    if isinstance(value, dict) and set(value) == {MARK}:
        sealed = value[MARK]
    elif isinstance(value, str) and value.startswith(TEXT):
        sealed = value[len(TEXT) :]
    if sealed is None:
        return value
    if sealer is None:
        raise SealedData(
            "this run's data is encrypted at rest: set WAYSTONE_ENCRYPTION_KEY to the key "
            "it was written with to read it"
        )
    import json

    return json.loads(sealer.open_bytes(base64.b64decode(sealed)))


class SealedSerializer(SerializerProtocol):
    """Wraps LangGraph's serializer: blobs are sealed after serialising, opened before
    loading. Blobs written without a key still load."""

    def __init__(self, inner: SerializerProtocol, sealer: Sealer | None) -> None:
        self.inner = inner
        self.sealer = sealer

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        kind, data = self.inner.dumps_typed(obj)
        if self.sealer is None:
            return kind, data
        return TYPE + kind, self.sealer.seal_bytes(data)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, blob = data
        if kind.startswith(TYPE):
            if self.sealer is None:
                raise SealedData(
                    "this checkpoint is encrypted at rest: set WAYSTONE_ENCRYPTION_KEY to the "
                    "key it was written with to read it"
                )
            return self.inner.loads_typed((kind[len(TYPE) :], self.sealer.open_bytes(blob)))
        return self.inner.loads_typed(data)

    def with_msgpack_allowlist(
        self, extra_allowlist: Iterable[tuple[str, ...] | type]
    ) -> SealedSerializer:
        """The same, loading the classes of ``extra_allowlist`` too (LangGraph widens a
        checkpointer's allowlist by a graph's state types, in its strict mode)."""
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

        if not isinstance(self.inner, JsonPlusSerializer):
            return self  # another serializer decides what it loads
        inner = self.inner.with_msgpack_allowlist(extra_allowlist)
        return self if inner is self.inner else SealedSerializer(inner, self.sealer)
