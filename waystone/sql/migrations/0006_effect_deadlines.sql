-- Version 6.
-- The latest deadline a call of each effect was sent with, written with its intent, so a
-- lookup that finds nothing is trusted only once every call's deadline has passed, by
-- whichever process made it (their timeouts may differ). A new table: nothing an older
-- process reads changes.
CREATE TABLE IF NOT EXISTS waystone.effect_deadlines (
    key      text PRIMARY KEY REFERENCES waystone.effects (key) ON DELETE CASCADE,
    deadline timestamptz NOT NULL
);
