-- Version 11.
-- Webhooks: the LangGraph server API's `webhook` on a run, called once when the run stops
-- (ends, or waits on an interrupt). A new table and a new trigger of its own on runs:
-- nothing an older process reads changes, and no existing trigger function is touched.
CREATE TABLE IF NOT EXISTS waystone.webhooks (
    id            bigserial PRIMARY KEY,
    thread_id     text NOT NULL REFERENCES waystone.runs (thread_id) ON DELETE CASCADE,
    run_number    integer NOT NULL,     -- the thread's run it is for
    url           jsonb NOT NULL,       -- redacted (and sealed) as runs' input: may hold secrets
    status        text NOT NULL DEFAULT 'armed'
                      CHECK (status IN ('armed', 'due', 'delivered', 'failed')),
    run_state     text,                 -- the state the run stopped in, and why
    run_reason    text,
    checkpoint_id text,                 -- the thread's latest checkpoint when it stopped
    due_at        timestamptz,          -- when the run stopped (in that transaction)
    next_at       timestamptz,          -- when the next attempt may go
    attempts      integer NOT NULL DEFAULT 0,
    lease_token   bigint NOT NULL DEFAULT 0,
    lease_owner   text,
    lease_until   timestamptz,
    last_error    text,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    done_at       timestamptz
);

CREATE INDEX IF NOT EXISTS webhooks_armed_idx ON waystone.webhooks (thread_id)
    WHERE status = 'armed';
CREATE INDEX IF NOT EXISTS webhooks_due_idx ON waystone.webhooks (next_at)
    WHERE status = 'due';

-- The outbox: a run that stops makes its armed webhooks due in the transaction that
-- records the stop, and announces them on 'waystone_webhook' (delivered at commit).
CREATE OR REPLACE FUNCTION waystone.webhooks_due() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE waystone.webhooks w
    SET status = 'due', run_state = NEW.state, run_reason = NEW.reason, due_at = clock_timestamp(),
        next_at = clock_timestamp(),
        checkpoint_id = (SELECT c.checkpoint_id FROM public.checkpoints c
                         WHERE c.thread_id = NEW.thread_id AND c.checkpoint_ns = ''
                         ORDER BY c.checkpoint_id DESC LIMIT 1)
    WHERE w.thread_id = NEW.thread_id AND w.status = 'armed'
      -- the run that stopped, not one queued behind it (waystone.pending_runs)
      AND w.run_number = 1 + (SELECT count(*) FROM waystone.thread_runs t
                              WHERE t.thread_id = NEW.thread_id);
    IF FOUND THEN
        PERFORM pg_notify('waystone_webhook', NEW.thread_id);
    END IF;
    RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS runs_webhooks_due ON waystone.runs;
CREATE TRIGGER runs_webhooks_due AFTER UPDATE OF state ON waystone.runs
    FOR EACH ROW WHEN (NEW.state IS DISTINCT FROM OLD.state
                       AND NEW.state IN ('waiting', 'done', 'failed', 'needs-human'))
    EXECUTE FUNCTION waystone.webhooks_due();
