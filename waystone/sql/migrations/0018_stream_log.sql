-- Version 18.
-- The stream log: the live events of a run that a client streams (tokens, custom writes),
-- appended by its worker, followed by the API servers.
CREATE TABLE waystone.stream_logs (
    thread_id  text NOT NULL REFERENCES waystone.runs (thread_id) ON DELETE CASCADE,
    number     integer NOT NULL,
    run_id     text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (thread_id, number)
);

CREATE TABLE waystone.stream_events (
    run_id     text NOT NULL REFERENCES waystone.stream_logs (run_id) ON DELETE CASCADE,
    event_key  text NOT NULL,
    attempt    bigint NOT NULL,
    event      text NOT NULL,
    data       jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (run_id, event_key)
);
