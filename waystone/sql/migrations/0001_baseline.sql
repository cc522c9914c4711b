-- Version 1: the schema as first released, frozen. Never edited: a fresh database gets
-- schema.sql; this file and the migrations above it are what an upgraded one went through.

CREATE SCHEMA IF NOT EXISTS waystone;

CREATE TABLE waystone.allowed_transitions (
    from_state text NOT NULL,
    to_state   text NOT NULL,
    PRIMARY KEY (from_state, to_state)
);

INSERT INTO waystone.allowed_transitions (from_state, to_state) VALUES
    ('queued', 'running'), ('queued', 'failed'),
    ('running', 'waiting'), ('running', 'done'), ('running', 'failed'),
    ('running', 'needs-human'),
    ('waiting', 'running'), ('waiting', 'failed'), ('waiting', 'needs-human'),
    ('failed', 'queued'), ('failed', 'needs-human'),
    ('needs-human', 'queued'), ('needs-human', 'failed');

CREATE TABLE waystone.runs (
    thread_id        text PRIMARY KEY,
    agent            text NOT NULL,
    state            text NOT NULL DEFAULT 'queued' CHECK (state IN
                         ('queued', 'running', 'waiting', 'done', 'failed', 'needs-human')),
    goal             text NOT NULL DEFAULT '',
    input            jsonb NOT NULL DEFAULT '{}',
    start_key        text UNIQUE,
    reason           text NOT NULL DEFAULT 'created',
    evidence         jsonb NOT NULL DEFAULT '{}',
    actor            text NOT NULL DEFAULT 'waystone',
    lease_token      bigint NOT NULL DEFAULT 0,
    lease_owner      text,
    lease_expires_at timestamptz,
    attempts         integer NOT NULL DEFAULT 0,
    waiting_for      text,          -- the signal a waiting run needs ('approval', a name)
    wake_at          timestamptz,   -- when a waiting run's wait times out
    forked_from      text,          -- the run this one was forked from
    key_namespace    text,          -- idempotency keys derive from this thread id (a fork's
                                    -- root), so a fork never repeats the original's effects
    summary          jsonb,         -- compact evidence kept when its checkpoints are pruned
    pruned_at        timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX runs_state_idx ON waystone.runs (state, updated_at);
CREATE INDEX runs_wake_idx ON waystone.runs (wake_at) WHERE state = 'waiting';
CREATE INDEX runs_lease_idx ON waystone.runs (lease_expires_at) WHERE state = 'running';

CREATE TABLE waystone.run_events (
    id          bigserial PRIMARY KEY,
    thread_id   text NOT NULL REFERENCES waystone.runs (thread_id) ON DELETE CASCADE,
    kind        text NOT NULL,
    from_state  text,
    to_state    text,
    reason      text NOT NULL,
    evidence    jsonb NOT NULL DEFAULT '{}',
    actor       text NOT NULL DEFAULT 'waystone',
    lease_token bigint,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX run_events_thread_idx ON waystone.run_events (thread_id, id);

-- The state machine, enforced by Postgres: a state change that is not in
-- allowed_transitions is rejected (SQLSTATE WS409), and every accepted one is recorded
-- in run_events with its reason and evidence, in the same transaction.
CREATE FUNCTION waystone.check_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.state <> 'queued' THEN
            RAISE EXCEPTION 'a run is created queued, not %', NEW.state
                USING ERRCODE = 'WS409';
        END IF;
        RETURN NEW;
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

CREATE TRIGGER runs_check_transition BEFORE INSERT OR UPDATE ON waystone.runs
    FOR EACH ROW EXECUTE FUNCTION waystone.check_transition();

CREATE FUNCTION waystone.record_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO waystone.run_events
            (thread_id, kind, from_state, to_state, reason, evidence, actor, lease_token)
        VALUES (NEW.thread_id, 'transition', NULL, NEW.state, NEW.reason, NEW.evidence,
                NEW.actor, NEW.lease_token);
    ELSIF NEW.state IS DISTINCT FROM OLD.state THEN
        INSERT INTO waystone.run_events
            (thread_id, kind, from_state, to_state, reason, evidence, actor, lease_token)
        VALUES (NEW.thread_id, 'transition', OLD.state, NEW.state, NEW.reason, NEW.evidence,
                NEW.actor, NEW.lease_token);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER runs_record_transition AFTER INSERT OR UPDATE ON waystone.runs
    FOR EACH ROW EXECUTE FUNCTION waystone.record_transition();

-- Signals: approvals and external events addressed to a run. A signal is recorded once
-- (the dedupe key) and consumed once, when the run resumes with it.
CREATE TABLE waystone.signals (
    id          bigserial PRIMARY KEY,
    thread_id   text NOT NULL REFERENCES waystone.runs (thread_id) ON DELETE CASCADE,
    name        text NOT NULL,
    dedupe_key  text NOT NULL,
    payload     jsonb NOT NULL DEFAULT '{}',
    actor       text NOT NULL DEFAULT 'waystone',
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    reserved_for text,        -- the interrupt id it was handed to, before the resume
    consumed_at timestamptz,
    UNIQUE (thread_id, name, dedupe_key)
);

CREATE INDEX signals_pending_idx ON waystone.signals (thread_id) WHERE consumed_at IS NULL;

-- The effect ledger: one row per external effect, keyed by its deterministic
-- idempotency key. intent -> applied -> confirmed, or failed / unknown.
CREATE TABLE waystone.effects (
    key          text PRIMARY KEY,
    thread_id    text NOT NULL REFERENCES waystone.runs (thread_id) ON DELETE CASCADE,
    ordinal      integer NOT NULL,
    tool         text NOT NULL,
    args         jsonb NOT NULL,
    status       text NOT NULL CHECK (status IN
                     ('intent', 'applied', 'confirmed', 'failed', 'unknown')),
    attempts     integer NOT NULL DEFAULT 0,
    receipt      jsonb,
    confirmation jsonb,
    error        text,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX effects_thread_idx ON waystone.effects (thread_id, ordinal);

-- Fencing (docs/architecture.md, section 6). A lease holder sets the transaction setting
-- waystone.lease_token before it writes; a write for a run whose current token differs is
-- rejected (SQLSTATE WS410). FOR SHARE makes a concurrent takeover wait for this write's
-- transaction, so no write with an old token lands after the token moved on. Writes that
-- carry no token (a person's event, on a 'lenient' table) take no such lock, so they never
-- make a claim skip the run.
CREATE FUNCTION waystone.check_fence() RETURNS trigger LANGUAGE plpgsql AS $$
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
    SELECT lease_token INTO current_token FROM waystone.runs
    WHERE thread_id = NEW.thread_id FOR SHARE;
    IF NOT FOUND THEN
        RETURN NEW;
    END IF;
    IF claimed::bigint <> current_token THEN
        RAISE EXCEPTION 'lease lost: write for run % carries token %, the current token is %',
            NEW.thread_id, claimed, current_token USING ERRCODE = 'WS410';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER effects_fence BEFORE INSERT OR UPDATE ON waystone.effects
    FOR EACH ROW EXECUTE FUNCTION waystone.check_fence('strict');
-- Events: a lease holder's events are fenced; a person's (approve, cancel) carry no token.
CREATE TRIGGER run_events_fence BEFORE INSERT ON waystone.run_events
    FOR EACH ROW EXECUTE FUNCTION waystone.check_fence('lenient');

-- Wake-ups without polling: a run that becomes runnable, or a signal that arrives, is
-- announced on the channel 'waystone_runnable' (LISTEN/NOTIFY), delivered at commit.
CREATE FUNCTION waystone.notify_runnable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('waystone_runnable', NEW.thread_id);
    RETURN NULL;
END $$;

CREATE TRIGGER runs_notify AFTER INSERT OR UPDATE OF state, lease_expires_at ON waystone.runs
    FOR EACH ROW WHEN (NEW.state = 'queued'
                       OR (NEW.state = 'running' AND NEW.lease_owner IS NULL))
    EXECUTE FUNCTION waystone.notify_runnable();
CREATE TRIGGER signals_notify AFTER INSERT ON waystone.signals
    FOR EACH ROW EXECUTE FUNCTION waystone.notify_runnable();

-- The vault: the only place real personal values live, encrypted (AES-GCM, the token as
-- associated data). Erasing a subject drops its ciphertext and keeps the token.
CREATE TABLE waystone.vault (
    token      text PRIMARY KEY,
    kind       text NOT NULL,
    ciphertext bytea,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    erased_at  timestamptz
);

-- Deployment-wide facts, e.g. the fingerprint of the vault key (so a process started with
-- another key is refused instead of writing tokens nobody can resolve).
CREATE TABLE waystone.settings (
    name  text PRIMARY KEY,
    value text NOT NULL
);
