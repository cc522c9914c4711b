"""A run's stream events in the LangGraph server API's shapes, made from LangGraph's own
stream chunks (:mod:`waystone._streams.render`)."""
