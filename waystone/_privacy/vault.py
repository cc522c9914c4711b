"""The vault: the one place real personal values live, encrypted (AES-GCM), erasable.

Everything else (checkpoints, pending writes, the ledger, events, logs) holds tokens such
as ``<pii:email:kfbmcoadhlgpinjnebka>``. A token is an HMAC of the value, so the same
value always gets the same token (checks can compare tokens) and redacting twice changes
nothing. Tools get the real values back at call time (:meth:`Vault.reveal`), so a run
resumed in another process still reaches the real customer. ``erase(subject)`` destroys a
value: the history keeps its token, the value is gone.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
import threading
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from waystone import sql
from waystone._db.database import Database
from waystone._privacy.pii import DEFAULT_PATTERNS, Detector
from waystone._privacy.walk import string_mapper
from waystone.errors import BadInput, PermanentError

TOKEN = re.compile(r"<pii:([a-z_]+):([a-p]{20})>")
_LETTERS = str.maketrans("0123456789abcdef", "abcdefghijklmnop")
CLEAN_TEXT_MAX = 4096  # longer strings are scanned every time
CLEAN_KEPT = 65536  # clean strings remembered, at most
NUMBER_MIN = 10_000_000  # smaller numbers have too few digits for a phone or card number


class Vault:
    def __init__(self, db: Database, key: bytes, detector: Detector | None = None) -> None:
        self.db = db
        self._aead = AESGCM(hashlib.sha256(b"waystone-vault-enc" + key).digest())
        self._mac_key = hashlib.sha256(b"waystone-vault-mac" + key).digest()
        self.detector = detector or Detector()
        self._stored: set[str] = set()
        self._clean: set[str] = set()  # strings found free of personal data (bounded)
        self._lock = threading.Lock()
        self._walk = string_mapper(self.redact_text, self._number)

    def check_key(self) -> None:
        """Refuse a key other than the one this database's vault was sealed with."""
        mark = hmac.new(self._mac_key, b"fingerprint", "sha256").hexdigest()[:16]
        with self.db.connection() as conn:
            conn.execute(sql.query("mark_vault_key"), {"mark": mark})
            row = conn.execute(sql.query("vault_key")).fetchone()
        if row is None or row["value"] != mark:
            raise BadInput(
                "this database's vault was sealed with another key: set "
                "WAYSTONE_ENCRYPTION_KEY to that key (every process of a deployment must "
                "use the same one)"
            )

    # -- tokens ------------------------------------------------------------------------

    def token_for(self, kind: str, value: str) -> str:
        digest = hmac.new(self._mac_key, f"{kind}\0{value}".encode(), "sha256").hexdigest()
        return f"<pii:{kind}:{digest[:20].translate(_LETTERS)}>"

    def _store(self, kind: str, value: str) -> str:
        token = self.token_for(kind, value)
        with self._lock:
            if token in self._stored:
                return token
        nonce = secrets.token_bytes(12)
        sealed = nonce + self._aead.encrypt(nonce, value.encode(), token.encode())
        with self.db.connection() as conn:
            params = {"token": token, "kind": kind, "sealed": sealed}
            conn.execute(sql.query("store_in_vault"), params)
        with self._lock:
            self._stored.add(token)
        return token

    def redact_text(self, text: str) -> str:
        # A run's state repeats its strings on every save (keys, tools, evidence): a
        # string already scanned clean is not scanned again.
        if text in self._clean:
            return text
        out = self.detector.replace(text, self._store)
        if out == text and len(text) <= CLEAN_TEXT_MAX:
            if len(self._clean) >= CLEAN_KEPT:
                self._clean.clear()
            self._clean.add(text)
        return out

    def redact(self, value: Any, key: str | None = None) -> Any:
        """``value`` with personal data replaced by tokens, in every string it contains
        (dict keys included) and in every number that is a card or phone number (a token
        too: a tool gets the digits back as a string), each container of its own type (see
        :mod:`waystone._privacy.walk`). ``key`` is the dict key ``value`` sits under: it
        tells a phone number from a count."""
        return self._walk(value, key)

    def _number(self, value: int, key: str | None) -> Any:
        if value < NUMBER_MIN:
            return value
        found = self.detector.number_kind(value, key)
        return value if found is None else self._store(found, str(value))

    # -- real values -------------------------------------------------------------------

    def reveal(self, value: Any) -> Any:
        """``value`` with tokens replaced by the real values (for a tool call)."""
        if isinstance(value, str):
            if "<pii:" not in value:
                return value
            return TOKEN.sub(lambda m: self._open(m.group(0)), value)
        if isinstance(value, dict):
            return {k: self.reveal(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.reveal(v) for v in value]
        return value

    def reveal_shown(self, value: Any) -> Any:
        """``value`` with tokens replaced by the real values, for a person who may see
        them: an erased token stays a token. Nothing is stored or cached."""
        if isinstance(value, str):
            if "<pii:" not in value:
                return value
            return TOKEN.sub(lambda m: self._open(m.group(0), erased=m.group(0)), value)
        if isinstance(value, dict):
            return {k: self.reveal_shown(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.reveal_shown(v) for v in value]
        return value

    def _open(self, token: str, *, erased: str | None = None) -> str:
        """The value behind ``token``; ``erased``: what an erased token gives (by default
        it is an error: a tool must not run without its value)."""
        with self.db.connection() as conn:
            row = conn.execute(sql.query("open_vault"), {"token": token}).fetchone()
        if row is None or row["ciphertext"] is None:
            if erased is not None:
                return erased
            raise PermanentError(
                f"{token} has been erased (or was never stored): the value is gone"
            )
        sealed = bytes(row["ciphertext"])
        return self._aead.decrypt(sealed[:12], sealed[12:], token.encode()).decode()

    def log_filter(self) -> logging.Filter:
        """A logging filter that replaces personal data in log messages by tokens (without
        storing anything: a log line never needs the real value back)."""
        vault = self

        class Redact(logging.Filter):
            def filter(self, record: logging.LogRecord) -> bool:
                message = record.getMessage()
                redacted = vault.detector.replace(message, vault.token_for)
                if redacted != message:
                    record.msg, record.args = redacted, ()
                if record.exc_info:  # a traceback's messages can carry personal data too
                    text = logging.Formatter().formatException(record.exc_info)
                    record.exc_text = vault.detector.replace(text, vault.token_for)
                    record.exc_info = None
                return True

        return Redact()

    def erase(self, subject: str) -> list[str]:
        """Destroy every stored value equal to ``subject``; return the erased tokens."""
        tokens = [self.token_for(p.kind, subject) for p in DEFAULT_PATTERNS]
        tokens += [self.token_for(p.kind, subject) for p in self.detector.patterns]
        with self.db.connection() as conn:
            erased = {"tokens": sorted(set(tokens))}
            rows = conn.execute(sql.query("erase_from_vault"), erased).fetchall()
        return [r["token"] for r in rows]
