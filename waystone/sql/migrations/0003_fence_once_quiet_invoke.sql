-- Version 3.
-- A run's fence is checked once per transaction: the rows after the first for the same
-- run under the same token pass at once (waystone.fenced, set by check_fence; cleared by
-- check_transition when any run's token changes). Same rules, a SELECT ... FOR SHARE less
-- per row: a step writes a dozen rows. And a run created and claimed in one transaction
-- (Runtime.invoke) wakes no worker.
CREATE OR REPLACE FUNCTION waystone.check_fence() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    claimed text := nullif(current_setting('waystone.lease_token', true), '');
    current_token bigint;
BEGIN
    IF claimed IS NULL THEN
        IF TG_ARGV[0] = 'strict'
           AND EXISTS (SELECT 1 FROM waystone.runs WHERE thread_id = NEW.thread_id) THEN
            RAISE EXCEPTION 'write for run % carries no lease token', NEW.thread_id
                USING ERRCODE = 'WS410';
        END IF;
        RETURN NEW;  -- lenient, or not a Waystone run (a plain LangGraph thread)
    END IF;
    IF current_setting('waystone.fenced', true) = claimed || '/' || NEW.thread_id THEN
        RETURN NEW;  -- checked in this transaction, and locked since
    END IF;
    SELECT lease_token INTO current_token FROM waystone.runs
    WHERE thread_id = NEW.thread_id FOR SHARE;
    IF NOT FOUND THEN
        RETURN NEW;
    END IF;
    IF claimed::bigint <> current_token THEN
        RAISE EXCEPTION 'lease lost: write for run % carries token %, the current token is %',
            NEW.thread_id, claimed, current_token USING ERRCODE = 'WS410';
    END IF;
    PERFORM set_config('waystone.fenced', claimed || '/' || NEW.thread_id, true);
    RETURN NEW;
END $$;

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

CREATE OR REPLACE FUNCTION waystone.notify_runnable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'runs'
       AND current_setting('waystone.claiming', true) = NEW.thread_id THEN
        RETURN NULL;
    END IF;
    PERFORM pg_notify('waystone_runnable', NEW.thread_id);
    RETURN NULL;
END $$;
