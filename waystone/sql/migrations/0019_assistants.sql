-- Version 19.
-- Assistants users make (the LangGraph server API's): a graph with its config, context and
-- metadata, in numbered versions, one of them in force. A graph's own assistant is not
-- stored: it is the graph's, everyone's. New tables: nothing an older process reads changes.
CREATE TABLE IF NOT EXISTS waystone.assistants (
    assistant_id text PRIMARY KEY,          -- a UUID
    owner        text,                      -- the API token's owner that made it; NULL:
                                            -- the operator's (see waystone.thread_owners)
    version      integer NOT NULL,          -- the version in force
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS assistants_owner_idx ON waystone.assistants (owner);

-- Every version of an assistant, as it was made; deleted with it.
CREATE TABLE IF NOT EXISTS waystone.assistant_versions (
    assistant_id text NOT NULL REFERENCES waystone.assistants ON DELETE CASCADE,
    version      integer NOT NULL,
    graph_id     text NOT NULL,
    name         jsonb NOT NULL,            -- these five redacted (and sealed) as runs' input
    description  jsonb NOT NULL,
    config       jsonb NOT NULL,
    context      jsonb NOT NULL,
    metadata     jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (assistant_id, version)
);
