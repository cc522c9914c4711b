"""Processes starting at once in a new WAYSTONE_HOME (a worker and a server started
together, as the README's API section starts them) agree on one generated key; none
reads the key file half-written or fails because another made it first."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

from waystone._privacy.keys import load_key


def _key_of(home: str) -> str:
    os.environ.pop("WAYSTONE_ENCRYPTION_KEY", None)
    return load_key(Path(home), None).hex()


def test_processes_starting_together_in_a_new_home_share_one_key(tmp_path: Path) -> None:
    homes = [str(tmp_path / f"home-{n}") for n in range(40)]
    with multiprocessing.get_context("fork").Pool(4) as pool:
        for home in homes:
            keys = set(pool.map(_key_of, [home] * 4))
            assert len(keys) == 1, keys
            assert (Path(home) / "vault.key").read_text() in keys
            assert [p.name for p in Path(home).iterdir()] == ["vault.key"]  # no draft left
