-- Version 2.
-- The interrupt a waiting run's deadline (wake_at) belongs to: a run taken over after its
-- wait was due still times out, and a wait is never given a second, fresh deadline. Runs
-- waiting now get theirs from their evidence (a sealed one cannot be read here: the claim
-- that takes it from its wait judges it as before, see driver._answer).
ALTER TABLE waystone.runs ADD COLUMN IF NOT EXISTS wait_id text;
UPDATE waystone.runs SET wait_id = evidence->>'interrupt_id'
WHERE state = 'waiting' AND wake_at IS NOT NULL AND wait_id IS NULL;
-- A worker finds each of its agents' oldest queued runs through this index, without
-- reading past other agents' backlog (the claim's queued_for). One scan of the runs table
-- under a SHARE lock (claims and transitions wait for it): seconds for millions of runs.
CREATE INDEX IF NOT EXISTS runs_queued_agent_idx
    ON waystone.runs (agent, updated_at, thread_id) WHERE state = 'queued';
-- The agents of a worker's claim, one per row, counted as few by the planner (schema.sql).
CREATE OR REPLACE FUNCTION waystone.each_agent(agents text[]) RETURNS SETOF text
    LANGUAGE plpgsql IMMUTABLE ROWS 2
    AS $$ BEGIN RETURN QUERY SELECT pg_catalog.unnest(agents); END $$;
