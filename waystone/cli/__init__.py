"""``waystone``: the command line. Every command takes ``--json`` and ``--database-url``.

Errors go to stderr with a non-zero exit: 2 bad input, 3 unknown thread, 4 transition not
allowed, 5 lease lost, 6 database unavailable, 7 the run a command drove ended ``failed``
or ``needs-human``.
"""

from __future__ import annotations

# each module's commands register on `app`, in the order --help lists them
from waystone.cli import runs  # noqa: F401  # isort: skip
from waystone.cli import ops  # noqa: F401  # isort: skip
from waystone.cli import db  # noqa: F401  # isort: skip
from waystone.cli import migrate  # noqa: F401  # isort: skip
from waystone.cli.app import app  # isort: skip


def main() -> None:
    app()


if __name__ == "__main__":
    main()
