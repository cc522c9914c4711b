"""Start the example payments provider in a subprocess (for the demo, tests and notebooks)."""

from __future__ import annotations

import json
import selectors
import subprocess
import sys
import urllib.request
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any


@dataclass
class ProviderProcess:
    """A running ``python -m waystone.examples.payments``; ``url`` is where it listens."""

    process: subprocess.Popen[str]
    url: str
    db_path: Path

    @classmethod
    def start(cls, db_path: Path, port: int = 0, timeout: float = 300.0) -> ProviderProcess:
        """Start it and wait for its ``listening on`` line. ``timeout`` bounds a start that
        never comes, on however loaded a machine; a provider that exits fails at once."""
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "waystone.examples.payments",
                "--port",
                str(port),
                "--db",
                str(db_path),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert process.stdout is not None
        line = _first_line(process.stdout, timeout)
        if line is None or not line.startswith("listening on "):
            if line is None:
                why = f"nothing printed within {timeout:g}s"
            else:  # its output ended: it is exiting
                with suppress(subprocess.TimeoutExpired):
                    process.wait(timeout)
                why = f"it exited with status {process.poll()}"
            process.kill()
            process.wait()
            process.stdout.close()
            raise RuntimeError(f"the payments provider did not start ({why}): {line!r}")
        return cls(process=process, url=line.split("listening on ", 1)[1].strip(), db_path=db_path)

    def ledger(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.url}/_ledger", timeout=10) as response:
            data: dict[str, Any] = json.loads(response.read())
            return data

    def inject(self, endpoint: str, mode: str, times: int = 1, delay_s: float = 0.0) -> None:
        """Arm a fault (see ``POST /_faults`` in :mod:`waystone.examples.payments`)."""
        body = json.dumps(
            {"endpoint": endpoint, "mode": mode, "times": times, "delay_s": delay_s}
        ).encode()
        request = urllib.request.Request(
            f"{self.url}/_faults",
            data=body,
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 201, response.status

    def clear_faults(self) -> None:
        request = urllib.request.Request(f"{self.url}/_faults", method="DELETE")
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status in (200, 204), response.status

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()

    def __enter__(self) -> ProviderProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _first_line(stream: IO[str], timeout: float) -> str | None:
    """The first line a process prints, once it comes: ``""`` if its output ends first,
    ``None`` if nothing comes within ``timeout``."""
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        if not selector.select(timeout):
            return None
    return stream.readline()
