-- Version 8.
-- A thread can exist before its first run: the LangGraph server API creates threads, with
-- metadata, and starts runs on them later. A thread started by a run alone (the CLI, a
-- notebook) has no row here; its runs row is the thread. A new table: nothing an older
-- process reads changes.
CREATE TABLE IF NOT EXISTS waystone.threads (
    thread_id  text PRIMARY KEY,
    metadata   jsonb NOT NULL DEFAULT '{}'::jsonb,  -- redacted (and sealed) as runs' input
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
