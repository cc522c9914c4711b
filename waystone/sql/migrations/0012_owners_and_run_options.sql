-- Version 12.
-- Owners per API token: a thread made through the API with an owner's token is that
-- owner's, and only that owner's (an operator's token, with no owner, sees every thread).
-- A thread with no row here (made by the operator, the CLI or a notebook) is no owner's.
-- New tables only: nothing an older process reads changes.
CREATE TABLE IF NOT EXISTS waystone.thread_owners (
    thread_id text PRIMARY KEY,
    owner     text NOT NULL
);
CREATE INDEX IF NOT EXISTS thread_owners_owner_idx ON waystone.thread_owners (owner);

-- Threads deleted through the API: gone from its view, their checkpoints erased; their
-- runs, events and effects stay (history is evidence), and the id stays taken.
CREATE TABLE IF NOT EXISTS waystone.deleted_threads (
    thread_id  text PRIMARY KEY,
    actor      text NOT NULL,
    deleted_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- What an API run was created with besides its input, kept with the run (not in the API
-- process) so the worker that drives it applies them, whichever worker that is.
CREATE TABLE IF NOT EXISTS waystone.run_options (
    run_id     text PRIMARY KEY,               -- the run's id (its thread's and number's)
    thread_id  text NOT NULL,
    metadata   jsonb NOT NULL DEFAULT '{}'::jsonb,  -- redacted (and sealed) as runs' input
    options    jsonb NOT NULL DEFAULT '{}'::jsonb,  -- config, context, interrupt_before/after
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS run_options_thread_idx ON waystone.run_options (thread_id);
