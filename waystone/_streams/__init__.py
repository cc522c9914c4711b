"""A run's live stream events (tokens, custom writes), kept in Postgres beside the run:
rendered to the reference server's events (``render``), keyed so they sort among the
events made from its checkpoints (``keys``), appended by the worker (``log``)."""
