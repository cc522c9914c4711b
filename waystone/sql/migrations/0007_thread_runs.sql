-- Version 7.
-- A thread holds many runs, one after another. waystone.runs keeps one row per thread:
-- its current run (state, lease, waits), so what reads or writes a run is unchanged, and
-- the lease token keeps rising across a thread's runs (a process still holding an earlier
-- run's token is fenced out). When a new run begins on a thread whose run ended, the
-- ended run is kept in waystone.thread_runs; a thread with one run has no row there. A
-- new table and new function bodies: nothing an older process reads changes.
CREATE TABLE IF NOT EXISTS waystone.thread_runs (
    thread_id   text NOT NULL REFERENCES waystone.runs (thread_id) ON DELETE CASCADE,
    number      integer NOT NULL,        -- 1, 2, ... in the thread; the current run is next
    agent       text NOT NULL,
    goal        text NOT NULL,
    input       jsonb NOT NULL,
    start_key   text UNIQUE,
    state       text NOT NULL,           -- how it ended
    reason      text NOT NULL,
    evidence    jsonb NOT NULL,
    attempts    integer NOT NULL,
    last_event  bigint NOT NULL,         -- its events: the thread's up to this id (from the
                                         -- previous run's last_event on)
    created_at  timestamptz NOT NULL,
    ended_at    timestamptz NOT NULL,
    PRIMARY KEY (thread_id, number)
);

-- waystone.next_run (set by begin_run, for one thread) marks the update that begins a new
-- run on it: from done or failed to queued, not a transition of the run that ended (any
-- other change of that thread's row in the transaction is one).
CREATE OR REPLACE FUNCTION waystone.check_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.state <> 'queued' THEN
            RAISE EXCEPTION 'a run is created queued, not %', NEW.state
                USING ERRCODE = 'WS409';
        END IF;
        RETURN NEW;
    END IF;
    IF NEW.lease_token IS DISTINCT FROM OLD.lease_token THEN
        PERFORM set_config('waystone.fenced', '', true);  -- check_fence asks again
    END IF;
    IF OLD.state IN ('done', 'failed') AND NEW.state = 'queued'
       AND current_setting('waystone.next_run', true) = OLD.thread_id THEN
        NEW.updated_at := clock_timestamp();
        NEW.created_at := NEW.updated_at;
        RETURN NEW;
    END IF;
    IF NEW.state IS DISTINCT FROM OLD.state THEN
        IF NOT EXISTS (SELECT 1 FROM waystone.allowed_transitions
                       WHERE from_state = OLD.state AND to_state = NEW.state) THEN
            RAISE EXCEPTION 'transition % -> % is not allowed (run %)',
                OLD.state, NEW.state, OLD.thread_id USING ERRCODE = 'WS409';
        END IF;
        IF coalesce(NEW.reason, '') = '' THEN
            RAISE EXCEPTION 'a transition needs a reason' USING ERRCODE = 'WS422';
        END IF;
        NEW.updated_at := clock_timestamp();
    END IF;
    RETURN NEW;
END $$;

CREATE OR REPLACE FUNCTION waystone.record_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO waystone.run_events
            (thread_id, kind, from_state, to_state, reason, evidence, actor, lease_token)
        VALUES (NEW.thread_id, 'transition', NULL, NEW.state, NEW.reason, NEW.evidence,
                NEW.actor, NEW.lease_token);
    ELSIF OLD.state IN ('done', 'failed') AND NEW.state = 'queued'
          AND current_setting('waystone.next_run', true) = OLD.thread_id THEN
        PERFORM set_config('waystone.next_run', '', true);  -- one run begins, once
        INSERT INTO waystone.thread_runs
            (thread_id, number, agent, goal, input, start_key, state, reason, evidence,
             attempts, last_event, created_at, ended_at)
        SELECT OLD.thread_id,
               1 + (SELECT count(*) FROM waystone.thread_runs t WHERE t.thread_id = OLD.thread_id),
               OLD.agent, OLD.goal, OLD.input, OLD.start_key, OLD.state, OLD.reason,
               OLD.evidence, OLD.attempts,
               (SELECT coalesce(max(e.id), 0) FROM waystone.run_events e
                WHERE e.thread_id = OLD.thread_id),
               OLD.created_at, OLD.updated_at;
        INSERT INTO waystone.run_events
            (thread_id, kind, from_state, to_state, reason, evidence, actor, lease_token)
        VALUES (NEW.thread_id, 'transition', NULL, NEW.state, NEW.reason, NEW.evidence,
                NEW.actor, NEW.lease_token);
    ELSIF NEW.state IS DISTINCT FROM OLD.state THEN
        INSERT INTO waystone.run_events
            (thread_id, kind, from_state, to_state, reason, evidence, actor, lease_token)
        VALUES (NEW.thread_id, 'transition', OLD.state, NEW.state, NEW.reason, NEW.evidence,
                NEW.actor, NEW.lease_token);
    END IF;
    RETURN NULL;
END $$;
