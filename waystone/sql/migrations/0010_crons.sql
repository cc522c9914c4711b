-- Version 10.
-- Crons (the LangGraph server API's): schedules that workers tick, and the record of
-- each tick they ran or passed over. New tables: nothing an older process reads changes.
CREATE TABLE IF NOT EXISTS waystone.crons (
    cron_id          text PRIMARY KEY,
    agent            text NOT NULL,          -- the graph (or agent) its runs are of
    thread_id        text,                   -- its runs' thread; NULL: a new thread a tick
    owner            text,                   -- the API token's owner that made it; NULL:
                                             -- the operator's (see waystone.thread_owners)
    schedule         text NOT NULL,          -- a cron expression, as croniter reads it
    timezone         text,                   -- an IANA zone; NULL: UTC
    input            jsonb NOT NULL DEFAULT '{}'::jsonb,  -- redacted (and sealed) as runs'
    metadata         jsonb NOT NULL DEFAULT '{}'::jsonb,  -- redacted (and sealed) as runs'
    on_run_completed text,
    end_time         timestamptz,            -- no tick after it runs
    enabled          boolean NOT NULL DEFAULT true,
    next_run_date    timestamptz NOT NULL,   -- its first tick not yet run
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at       timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX IF NOT EXISTS crons_due_idx ON waystone.crons (agent, next_run_date) WHERE enabled;

-- Every tick a ticker took: the run it started (its thread and start key), or why it
-- started none; and the earlier ticks it passed over, by the missed-tick policy. Kept
-- when the cron is deleted: it is the evidence of what ran. One row per tick.
CREATE TABLE IF NOT EXISTS waystone.cron_ticks (
    cron_id     text NOT NULL,
    tick_at     timestamptz NOT NULL,        -- the time the schedule gave it
    outcome     text NOT NULL CHECK (outcome IN ('started', 'skipped')),
    thread_id   text,
    start_key   text,
    reason      text NOT NULL,
    missed      integer NOT NULL DEFAULT 0,  -- earlier ticks not run
    missed_from timestamptz,                 -- the first of them
    ticked_by   text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (cron_id, tick_at)
);

-- A cron made or changed wakes the tickers (the workers), so its first tick is on time.
CREATE OR REPLACE FUNCTION waystone.notify_crons() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('waystone_crons', NEW.cron_id);
    RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS crons_notify ON waystone.crons;
CREATE TRIGGER crons_notify AFTER INSERT OR UPDATE OF schedule, timezone, enabled, end_time,
    updated_at ON waystone.crons
    FOR EACH ROW EXECUTE FUNCTION waystone.notify_crons();
