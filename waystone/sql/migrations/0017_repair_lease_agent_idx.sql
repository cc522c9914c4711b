-- Version 17.
-- A database that applied 0004 as first written has runs_lease_agent_idx on
-- (agent, lease_expires_at NULLS FIRST), an order the claim does not use: it gets the
-- index 0004 makes now. A database that has that index already is left as it is (no lock).
DO $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM pg_catalog.pg_indexes
        WHERE schemaname = 'waystone' AND indexname = 'runs_lease_agent_idx'
          AND indexdef LIKE '%COALESCE(lease_expires_at%'
    ) THEN
        -- the strongest lock first: a claim arriving between two statements deadlocks
        LOCK TABLE waystone.runs IN ACCESS EXCLUSIVE MODE;
        DROP INDEX IF EXISTS waystone.runs_lease_agent_idx;
        CREATE INDEX runs_lease_agent_idx
            ON waystone.runs (agent, coalesce(lease_expires_at, '-infinity'::timestamptz))
            WHERE state = 'running';
    END IF;
END $$;
