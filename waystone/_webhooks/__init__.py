"""Webhooks: a run created through the LangGraph server API with ``webhook=URL`` has the
URL called once when it stops, delivered durably by the workers (an outbox row made due
in the stop's transaction; see :mod:`waystone._webhooks.store` and
:mod:`waystone.worker.webhooks`)."""
