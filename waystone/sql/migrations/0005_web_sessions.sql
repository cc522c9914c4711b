-- Version 5.
-- The web page's sessions, kept where every `waystone serve` process sees them, so a
-- logout revokes a session at once. A new table: nothing an older process reads changes.
CREATE TABLE IF NOT EXISTS waystone.web_sessions (
    key        text PRIMARY KEY,   -- sha256 of the session id (the cookie holds the id)
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at timestamptz NOT NULL
);
