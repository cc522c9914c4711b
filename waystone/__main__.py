"""``python -m waystone`` is the ``waystone`` command."""

from waystone.cli import main

main()
