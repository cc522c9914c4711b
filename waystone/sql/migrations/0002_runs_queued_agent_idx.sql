-- A worker that serves some agents finds each one's oldest queued run through this
-- index, without reading past other agents' backlog (the claim's queued_for).
CREATE INDEX IF NOT EXISTS runs_queued_agent_idx
    ON waystone.runs (agent, updated_at, thread_id) WHERE state = 'queued';
