"""A run's stream events in the LangGraph server API's shapes: rendered from LangGraph's own
stream chunks (``render``); the live ones (tokens, custom writes) kept in Postgres beside
the run, keyed so they sort among the events made from its checkpoints (``keys``),
appended by the worker (``log``)."""
