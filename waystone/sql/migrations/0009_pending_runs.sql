-- Version 9. New tables, functions and a trigger: nothing an older process reads changes.
-- Runs asked for on a thread while its run is active (the LangGraph server API's
-- multitask_strategy "enqueue", and the successor of an "interrupt" or "rollback"): they
-- wait here, in order, until the thread's run ends; the transaction that ends it begins
-- the first of them (waystone.begin_pending), so a crash can neither lose nor double one.
-- Their number is the one each will have in its thread (its run id derives from it).
CREATE TABLE IF NOT EXISTS waystone.pending_runs (
    thread_id  text NOT NULL REFERENCES waystone.runs (thread_id) ON DELETE CASCADE,
    number     integer NOT NULL,
    agent      text NOT NULL,
    goal       text NOT NULL,
    input      jsonb NOT NULL,                  -- redacted (and sealed) as a run's input
    evidence   jsonb NOT NULL,
    actor      text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (thread_id, number)
);

-- Begin the thread's first pending run if its run has ended (done or failed): the ended
-- run is kept in thread_runs (record_transition) and the row becomes the pending run,
-- queued, its lease token raised. False when the run has not ended or none is pending.
CREATE OR REPLACE FUNCTION waystone.begin_pending(tid text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    p waystone.pending_runs%ROWTYPE;
BEGIN
    SELECT * INTO p FROM waystone.pending_runs WHERE thread_id = tid
    ORDER BY number LIMIT 1 FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    -- the thread's next run begins: not a write of the lease holder that ended it
    PERFORM set_config('waystone.lease_token', '', true);
    PERFORM set_config('waystone.next_run', tid, true);
    UPDATE waystone.runs r
    SET state = 'queued', goal = p.goal, input = p.input, start_key = NULL,
        reason = 'began: it was pending behind the run before it', evidence = p.evidence,
        actor = p.actor, attempts = 0, lease_token = r.lease_token + 1,
        lease_owner = NULL, lease_expires_at = NULL, waiting_for = NULL, wake_at = NULL,
        wait_id = NULL
    WHERE r.thread_id = tid AND r.state IN ('done', 'failed') AND r.pruned_at IS NULL;
    IF NOT FOUND THEN
        PERFORM set_config('waystone.next_run', '', true);
        RETURN false;
    END IF;
    DELETE FROM waystone.pending_runs WHERE thread_id = tid AND number = p.number;
    RETURN true;
END $$;

CREATE OR REPLACE FUNCTION waystone.begin_pending_on_end() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM waystone.begin_pending(NEW.thread_id);
    RETURN NULL;
END $$;

-- Deferred to the commit: a worker's last save ends its run first and writes its
-- checkpoint after, under the lease token that beginning the next run raises.
DROP TRIGGER IF EXISTS runs_begin_pending ON waystone.runs;
CREATE CONSTRAINT TRIGGER runs_begin_pending AFTER UPDATE OF state ON waystone.runs
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.state IN ('done', 'failed') AND OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION waystone.begin_pending_on_end();
