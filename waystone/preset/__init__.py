"""The agent preset: Waystone's five-node agent (propose, authorize, execute, confirm,
verify), configured by an :class:`~waystone.preset.spec.AgentSpec` (its tools, a policy, a
proposer, its checks), and the nodes and graph built from one. It runs on the core like
any graph: the runtime drives it, its effects go through the ledger."""
