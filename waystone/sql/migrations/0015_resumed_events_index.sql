-- Version 15.
-- The claims that resumed a run (a transition to running, a lease taken over), by thread
-- and time: a step's time on a run's page starts at the latest one inside the step, read
-- by this index instead of every event of the thread. Only those events are indexed (a
-- few per run); an older process ignores the index.
CREATE INDEX IF NOT EXISTS run_events_resumed_idx ON waystone.run_events (thread_id, created_at)
    WHERE (kind = 'transition' AND to_state = 'running') OR kind = 'lease-takeover';
