"""How the PII scan grows with its input: CPU seconds to scan 6,400 / 64,000 / 640,000
characters of several contents, and the ratios between sizes (linear: about 10x per
decade; the goal is under 10x from 6,400 to 64,000 characters).

    python scripts/bench_pii.py [--sizes 6400,64000,640000] [--repeat 3] [--json]

Pure CPU, no database. Each time is the best of at least ``--repeat`` scans.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import time
import uuid
from collections.abc import Callable

from waystone._privacy.pii import Detector

NOTE = (
    "Customer ana.lopez@example.com (+49 170 1234567, card 4111 1111 1111 1111, "
    "IBAN DE89 3704 0044 0532 0130 00) asked on 2026-11-30 14:18:23 about order 1001, "
    "amount 120.00, key ws-refund-01e057b5b4353d9d198c3b7e4a79fb95585e1534. "
)


def _random(alphabet: str) -> Callable[[int], str]:
    def make(n: int) -> str:
        rng = random.Random(15)
        return "".join(rng.choices(alphabet, k=n))

    return make


def _repeat(unit: str) -> Callable[[int], str]:
    return lambda n: (unit * (n // len(unit) + 1))[:n]


def _uuids(n: int) -> str:
    rng = random.Random(15)
    ids = (str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(n // 37 + 1))
    return " ".join(ids)[:n]


CONTENTS: dict[str, Callable[[int], str]] = {
    "letters": _random(string.ascii_letters),
    "digits": _random(string.digits),
    "mixed": _random(string.ascii_letters + string.digits + " .-+()/_:"),
    "at_heavy": _random("ab.@@ "),
    "whitespace": _random(" \t\n"),
    "same_letter": lambda n: "a" * n,
    "same_digit": lambda n: "4" * n,
    "note_with_pii": _repeat(NOTE),
    # the forms found wherever they stand: cards joined to words, spaced emails
    "digits_joined": _random(string.digits + "_-"),
    "digits_spaced": _random(string.digits * 3 + " -_x"),
    "digit_groups": _random(string.digits * 4 + " "),  # many groups of a few digits
    "groups_of_four": _repeat("1234 5678 9012 3456 7890 "),  # each group a retry's start
    "cards_joined": _repeat("ref_4111111111111111 id-4111111111111111 4111111111111111_x "),
    "cards_in_hex": _repeat("ab4111111111111111"),  # one word of hex digits
    "spaced_at_dots": _random("ab .@"),
    "spaced_emails": _repeat("name . person @ example . com, x @example.com x@example .com "),
    "dots_no_tld": _repeat("a . b . c . d . e . f . g . h . i . j . k @ "),
    # what must be left alone around a number: uuids, hex tokens, ids made of numbers
    "uuids": lambda n: _uuids(n),
    "hex_tokens": _random(string.hexdigits + "-_"),
    "number_ids": _repeat("tx_7248198128_320529 evt_1764512303123 backup_20260102_181928 "),
    "csv_cards": _repeat("7,2,4111111111111111\n"),
}


def scan_seconds(detector: Detector, texts: dict[int, str], repeat: int) -> dict[int, float]:
    """The best CPU time of a scan of each text. CPU time, not wall time: on a loaded
    machine a long scan is preempted more often than a short one. The sizes take turns,
    round after round, so that a change of load touches them alike."""
    best = dict.fromkeys(texts, float("inf"))
    spent, rounds = 0.0, 0
    while rounds < repeat or (spent < 1.0 and rounds < 200):
        for n, text in texts.items():
            start = time.thread_time()
            for _finding in detector.find(text):
                pass
            took = time.thread_time() - start
            best[n], spent = min(best[n], took), spent + took
        rounds += 1
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="6400,64000,640000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    detector = Detector()
    report: dict[str, dict[str, float]] = {}
    for name, make in CONTENTS.items():
        times = scan_seconds(detector, {n: make(n) for n in sizes}, args.repeat)
        row = {f"{n}_s": round(t, 4) for n, t in times.items()}
        for small, big in zip(sizes, sizes[1:], strict=False):
            row[f"ratio_{big}/{small}"] = round(times[big] / max(times[small], 1e-9), 1)
        report[name] = row
        if not args.json:
            cells = "  ".join(f"{k}={v}" for k, v in row.items())
            print(f"{name:14} {cells}", flush=True)
    if args.json:
        print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
