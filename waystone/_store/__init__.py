"""The LangGraph store (long-term memory, a layer apart from a run's checkpoints) on
Waystone's Postgres: LangGraph's own ``PostgresStore``, its values redacted and sealed
at rest (:mod:`.sealed`), each owner's namespaces apart (:mod:`.owned`), configured by
``langgraph.json``'s ``store`` (:mod:`.configured`)."""
