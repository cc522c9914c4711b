"""The runtime's collaborators, above the runs' registry and the effects: what a runtime
is made of (parts), what it drives (catalog, graphs), and its commands, drives, views,
driver, crons, multitask strategies, settling, stopped calls and retention. The facade,
:class:`waystone.runtime.Runtime`, holds them; nothing below imports them."""
