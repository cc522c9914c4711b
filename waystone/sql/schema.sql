-- Waystone's schema: the one truth. A fresh database gets this file; older databases
-- get the numbered files in migrations/ (see waystone/_db/migrations.py).
-- LangGraph's own tables (checkpoints, checkpoint_blobs, checkpoint_writes) are created
-- by langgraph-checkpoint-postgres' setup() in the public schema.

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
    updated_at       timestamptz NOT NULL DEFAULT now(),
    wait_id          text           -- the interrupt whose wait wake_at is the deadline of
);

CREATE INDEX runs_state_idx ON waystone.runs (state, updated_at);
CREATE INDEX runs_queued_agent_idx ON waystone.runs (agent, updated_at, thread_id) WHERE state = 'queued';
-- A worker finds its agents' first due waits and first expired leases through these,
-- one agent at a time: never reading past another agent's (the claim's due and expired).
-- A lease never set counts as expired, first: the time bounds the scan.
CREATE INDEX runs_wake_agent_idx ON waystone.runs (agent, wake_at) WHERE state = 'waiting';
CREATE INDEX runs_lease_agent_idx
    ON waystone.runs (agent, coalesce(lease_expires_at, '-infinity'::timestamptz))
    WHERE state = 'running';

-- The agents of a worker's claim, one per row. A function so the planner counts them as
-- few (ROWS 2; a worker serves a few agents): with unnest's default estimate of 10, the
-- claim's reusable plan looked dearer than a fresh one, and each claim was planned anew.
CREATE FUNCTION waystone.each_agent(agents text[]) RETURNS SETOF text
    LANGUAGE plpgsql IMMUTABLE ROWS 2
    AS $$ BEGIN RETURN QUERY SELECT pg_catalog.unnest(agents); END $$;

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
-- The claims that resumed a run, by time: where a step's time starts (queries.sql's
-- timed_steps) when a claim came inside the step.
CREATE INDEX run_events_resumed_idx ON waystone.run_events (thread_id, created_at)
    WHERE (kind = 'transition' AND to_state = 'running') OR kind = 'lease-takeover';

-- The state machine, enforced by Postgres: a state change that is not in
-- allowed_transitions is rejected (SQLSTATE WS409), and every accepted one is recorded
-- in run_events with its reason and evidence, in the same transaction. The update that
-- begins a new run on a thread whose run ended (waystone.next_run, set by begin_run for
-- that thread) is no transition of the ended run: that run is kept in thread_runs.
CREATE FUNCTION waystone.check_transition() RETURNS trigger LANGUAGE plpgsql AS $$
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
    IF OLD.state IN ('done', 'failed') AND NEW.state = 'queued'
       AND current_setting('waystone.next_run', true) = OLD.thread_id THEN
        NEW.updated_at := clock_timestamp();
        NEW.created_at := NEW.updated_at;
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

-- A run that fails (cancelled, stopped by a double-text, an error, a wait that timed out)
-- takes no more signals: those addressed to it that it never used are consumed, with an
-- event listing them and why, so none is left listed as pending. Requeued, the run has
-- them back (reopen_settled_signals).
CREATE FUNCTION waystone.settle_signals(thread text, why text, who text) RETURNS void
    LANGUAGE plpgsql AS $$
BEGIN
    WITH spent AS (
        UPDATE waystone.signals SET consumed_at = clock_timestamp()
        WHERE thread_id = thread AND consumed_at IS NULL
        RETURNING id, name
    )
    INSERT INTO waystone.run_events (thread_id, kind, reason, evidence, actor)
    SELECT thread, 'signals-settled', 'the run failed: ' || why,
           jsonb_build_object('signals', jsonb_agg(jsonb_build_object('id', id, 'name', name)
                                                   ORDER BY id)),
           coalesce(who, 'waystone')
    FROM spent
    HAVING count(*) > 0;
END $$;

CREATE FUNCTION waystone.record_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO waystone.run_events
            (thread_id, kind, from_state, to_state, reason, evidence, actor, lease_token)
        VALUES (NEW.thread_id, 'transition', NULL, NEW.state, NEW.reason, NEW.evidence,
                NEW.actor, NEW.lease_token);
    ELSIF OLD.state IN ('done', 'failed') AND NEW.state = 'queued'
          AND current_setting('waystone.next_run', true) = OLD.thread_id THEN
        PERFORM set_config('waystone.next_run', '', true);  -- one run begins, once
        INSERT INTO waystone.thread_runs
            (thread_id, number, agent, goal, input, start_key, state, reason, evidence,
             attempts, last_event, created_at, ended_at)
        SELECT OLD.thread_id,
               1 + (SELECT count(*) FROM waystone.thread_runs t WHERE t.thread_id = OLD.thread_id),
               OLD.agent, OLD.goal, OLD.input, OLD.start_key, OLD.state, OLD.reason,
               OLD.evidence, OLD.attempts,
               (SELECT coalesce(max(e.id), 0) FROM waystone.run_events e
                WHERE e.thread_id = OLD.thread_id),
               OLD.created_at, OLD.updated_at;
        INSERT INTO waystone.run_events
            (thread_id, kind, from_state, to_state, reason, evidence, actor, lease_token)
        VALUES (NEW.thread_id, 'transition', NULL, NEW.state, NEW.reason, NEW.evidence,
                NEW.actor, NEW.lease_token);
    ELSIF NEW.state IS DISTINCT FROM OLD.state THEN
        INSERT INTO waystone.run_events
            (thread_id, kind, from_state, to_state, reason, evidence, actor, lease_token)
        VALUES (NEW.thread_id, 'transition', OLD.state, NEW.state, NEW.reason, NEW.evidence,
                NEW.actor, NEW.lease_token);
        IF NEW.state = 'failed' THEN
            PERFORM waystone.settle_signals(NEW.thread_id, NEW.reason, NEW.actor);
        END IF;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER runs_record_transition AFTER INSERT OR UPDATE ON waystone.runs
    FOR EACH ROW EXECUTE FUNCTION waystone.record_transition();

-- A thread holds many runs, one after another: runs has its current one, thread_runs
-- each one that ended before the next began (a thread with one run has no row here).
CREATE TABLE waystone.thread_runs (
    thread_id   text NOT NULL REFERENCES waystone.runs (thread_id) ON DELETE CASCADE,
    number      integer NOT NULL,        -- 1, 2, ... in the thread; the current run is next
    agent       text NOT NULL,
    goal        text NOT NULL,
    input       jsonb NOT NULL,
    start_key   text UNIQUE,
    state       text NOT NULL,           -- how it ended
    reason      text NOT NULL,
    evidence    jsonb NOT NULL,
    attempts    integer NOT NULL,
    last_event  bigint NOT NULL,         -- its events: the thread's up to this id (from the
                                         -- previous run's last_event on)
    created_at  timestamptz NOT NULL,
    ended_at    timestamptz NOT NULL,
    PRIMARY KEY (thread_id, number)
);


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
-- idempotency key. intent -> applied -> confirmed, or failed / unknown; interrupted: the
-- call raised interrupt(), and is made again (same key) when its node runs again; absent:
-- a person who checked the provider found no such effect (settle), so it is made again.
CREATE TABLE waystone.effects (
    key          text PRIMARY KEY,
    thread_id    text NOT NULL REFERENCES waystone.runs (thread_id) ON DELETE CASCADE,
    ordinal      integer NOT NULL,
    tool         text NOT NULL,
    args         jsonb NOT NULL,
    status       text NOT NULL CONSTRAINT effects_status_check CHECK (status IN
                     ('intent', 'applied', 'confirmed', 'failed', 'unknown', 'interrupted',
                      'absent')),
    attempts     integer NOT NULL DEFAULT 0,
    receipt      jsonb,
    confirmation jsonb,
    error        text,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    tool_call_id text            -- the model's tool call it was made for, if any
);

CREATE INDEX effects_thread_idx ON waystone.effects (thread_id, ordinal);
CREATE INDEX effects_tool_call_idx ON waystone.effects (thread_id, tool_call_id)
    WHERE tool_call_id IS NOT NULL;

-- The latest deadline a call of each effect was sent with (written with its intent): a
-- lookup that finds nothing is trusted only once it has passed, whoever made the call.
CREATE TABLE waystone.effect_deadlines (
    key      text PRIMARY KEY REFERENCES waystone.effects (key) ON DELETE CASCADE,
    deadline timestamptz NOT NULL
);

-- Fencing (docs/architecture.md, section 6). A lease holder sets the transaction setting
-- waystone.lease_token before it writes; a write for a run whose current token differs is
-- rejected (SQLSTATE WS410). FOR SHARE makes a concurrent takeover wait for this write's
-- transaction, so no write with an old token lands after the token moved on. Writes that
-- carry no token (a person's event, on a 'lenient' table) take no such lock, so they never
-- make a claim skip the run. Once a run's token is checked in a transaction, the run's
-- next rows under that token pass at once (waystone.fenced): the lock it took holds until
-- the transaction ends, so only the transaction itself can move the token, and a change of
-- any run's token clears the mark (check_transition). A step writes a dozen rows.
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

CREATE TRIGGER effects_fence BEFORE INSERT OR UPDATE ON waystone.effects
    FOR EACH ROW EXECUTE FUNCTION waystone.check_fence('strict');
-- Events: a lease holder's events are fenced; a person's (approve, cancel) carry no token.
CREATE TRIGGER run_events_fence BEFORE INSERT ON waystone.run_events
    FOR EACH ROW EXECUTE FUNCTION waystone.check_fence('lenient');

-- Wake-ups without polling: a run that becomes runnable, or a signal that arrives, is
-- announced on the channel 'waystone_runnable' (LISTEN/NOTIFY), delivered at commit. A
-- run created and claimed in one transaction (Runtime.invoke, which names it in
-- waystone.claiming first) is never runnable once committed: no worker is woken for it.
CREATE FUNCTION waystone.notify_runnable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'runs'
       AND current_setting('waystone.claiming', true) = NEW.thread_id THEN
        RETURN NULL;
    END IF;
    PERFORM pg_notify('waystone_runnable', NEW.thread_id);
    RETURN NULL;
END $$;

CREATE TRIGGER runs_notify AFTER INSERT OR UPDATE OF state, lease_expires_at ON waystone.runs
    FOR EACH ROW WHEN (NEW.state = 'queued'
                       OR (NEW.state = 'running' AND NEW.lease_owner IS NULL))
    EXECUTE FUNCTION waystone.notify_runnable();
CREATE TRIGGER signals_notify AFTER INSERT ON waystone.signals
    FOR EACH ROW EXECUTE FUNCTION waystone.notify_runnable();

-- Crons (the LangGraph server API's): schedules that workers tick, and the record of
-- each tick they ran or passed over.
CREATE TABLE waystone.crons (
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

CREATE INDEX crons_due_idx ON waystone.crons (agent, next_run_date) WHERE enabled;

-- Every tick a ticker took: the run it started (its thread and start key), or why it
-- started none; and the earlier ticks it passed over, by the missed-tick policy. Kept
-- when the cron is deleted: it is the evidence of what ran. One row per tick.
CREATE TABLE waystone.cron_ticks (
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
CREATE FUNCTION waystone.notify_crons() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('waystone_crons', NEW.cron_id);
    RETURN NULL;
END $$;

CREATE TRIGGER crons_notify AFTER INSERT OR UPDATE OF schedule, timezone, enabled, end_time,
    updated_at ON waystone.crons
    FOR EACH ROW EXECUTE FUNCTION waystone.notify_crons();

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

-- The web page's sessions (`waystone serve`): one row per logged-in browser until it logs
-- out or the session expires, shared by every server process.
CREATE TABLE waystone.web_sessions (
    key        text PRIMARY KEY,   -- sha256 of the session id (the cookie holds the id)
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at timestamptz NOT NULL
);

-- Threads made before their first run (the LangGraph server API's threads), with their
-- metadata. A thread started by a run alone has no row here: its runs row is the thread.
CREATE TABLE waystone.threads (
    thread_id  text PRIMARY KEY,
    metadata   jsonb NOT NULL DEFAULT '{}'::jsonb,  -- redacted (and sealed) as runs' input
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The owner of a thread made through the API with an owner's token; only that owner (and
-- the operator) finds it. A thread with no row here is no owner's: the operator's only.
CREATE TABLE waystone.thread_owners (
    thread_id text PRIMARY KEY,
    owner     text NOT NULL
);
CREATE INDEX thread_owners_owner_idx ON waystone.thread_owners (owner);

-- Threads deleted through the API: gone from its view, their checkpoints erased; their
-- runs, events and effects stay (history is evidence), and the id stays taken.
CREATE TABLE waystone.deleted_threads (
    thread_id  text PRIMARY KEY,
    actor      text NOT NULL,
    deleted_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- What an API run was created with besides its input (metadata; config, context and
-- breakpoints), read by the worker that drives the run.
CREATE TABLE waystone.run_options (
    run_id     text PRIMARY KEY,               -- the run's id (its thread's and number's)
    thread_id  text NOT NULL,
    metadata   jsonb NOT NULL DEFAULT '{}'::jsonb,  -- redacted (and sealed) as runs' input
    options    jsonb NOT NULL DEFAULT '{}'::jsonb,  -- config, context, interrupt_before/after
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX run_options_thread_idx ON waystone.run_options (thread_id);

-- Runs asked for on a thread while its run is active (the LangGraph server API's
-- multitask_strategy "enqueue", and the successor of an "interrupt" or "rollback"): they
-- wait here, in order, until the thread's run ends; the transaction that ends it begins
-- the first of them (waystone.begin_pending), so a crash can neither lose nor double one.
-- Their number is the one each will have in its thread (its run id derives from it).
CREATE TABLE waystone.pending_runs (
    thread_id  text NOT NULL REFERENCES waystone.runs (thread_id) ON DELETE CASCADE,
    number     integer NOT NULL,
    agent      text NOT NULL,
    goal       text NOT NULL,
    input      jsonb NOT NULL,                  -- redacted (and sealed) as a run's input
    evidence   jsonb NOT NULL,
    actor      text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (thread_id, number)
);

-- Begin the thread's first pending run if its run has ended (done or failed): the ended
-- run is kept in thread_runs (record_transition) and the row becomes the pending run,
-- queued, its lease token raised. False when the run has not ended or none is pending.
CREATE FUNCTION waystone.begin_pending(tid text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    p waystone.pending_runs%ROWTYPE;
BEGIN
    SELECT * INTO p FROM waystone.pending_runs WHERE thread_id = tid
    ORDER BY number LIMIT 1 FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    -- the thread's next run begins: not a write of the lease holder that ended it
    PERFORM set_config('waystone.lease_token', '', true);
    PERFORM set_config('waystone.next_run', tid, true);
    UPDATE waystone.runs r
    SET state = 'queued', goal = p.goal, input = p.input, start_key = NULL,
        reason = 'began: it was pending behind the run before it', evidence = p.evidence,
        actor = p.actor, attempts = 0, lease_token = r.lease_token + 1,
        lease_owner = NULL, lease_expires_at = NULL, waiting_for = NULL, wake_at = NULL,
        wait_id = NULL
    WHERE r.thread_id = tid AND r.state IN ('done', 'failed') AND r.pruned_at IS NULL;
    IF NOT FOUND THEN
        PERFORM set_config('waystone.next_run', '', true);
        RETURN false;
    END IF;
    DELETE FROM waystone.pending_runs WHERE thread_id = tid AND number = p.number;
    RETURN true;
END $$;

CREATE FUNCTION waystone.begin_pending_on_end() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM waystone.begin_pending(NEW.thread_id);
    RETURN NULL;
END $$;

-- Deferred to the commit: a worker's last save ends its run first and writes its
-- checkpoint after, under the lease token that beginning the next run raises.
CREATE CONSTRAINT TRIGGER runs_begin_pending AFTER UPDATE OF state ON waystone.runs
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.state IN ('done', 'failed') AND OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION waystone.begin_pending_on_end();

-- Webhooks: the LangGraph server API's `webhook` on a run, called once when the run stops
-- (ends, or waits on an interrupt); see waystone/_webhooks.
CREATE TABLE waystone.webhooks (
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

CREATE INDEX webhooks_armed_idx ON waystone.webhooks (thread_id)
    WHERE status = 'armed';
CREATE INDEX webhooks_due_idx ON waystone.webhooks (next_at)
    WHERE status = 'due';

-- The outbox: a run that stops makes its armed webhooks due in the transaction that
-- records the stop, and announces them on 'waystone_webhook' (delivered at commit).
CREATE FUNCTION waystone.webhooks_due() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER runs_webhooks_due AFTER UPDATE OF state ON waystone.runs
    FOR EACH ROW WHEN (NEW.state IS DISTINCT FROM OLD.state
                       AND NEW.state IN ('waiting', 'done', 'failed', 'needs-human'))
    EXECUTE FUNCTION waystone.webhooks_due();

-- The stream log (docs/api.md, "The stream log"). A run is logged when it has a row in
-- stream_logs (created resumable, or a client streams or joins it); its worker appends its
-- live events (tokens, custom writes) to stream_events, fenced by its lease token. Event
-- keys sort in the order the events are sent. Both are swept once the run ended long ago.
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

-- Assistants users make (the LangGraph server API's): a graph with its config, context and
-- metadata, in numbered versions, one of them in force. A graph's own assistant is not
-- stored: it is the graph's, everyone's.
CREATE TABLE waystone.assistants (
    assistant_id text PRIMARY KEY,          -- a UUID
    owner        text,                      -- the API token's owner that made it; NULL:
                                            -- the operator's (see waystone.thread_owners)
    version      integer NOT NULL,          -- the version in force
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX assistants_owner_idx ON waystone.assistants (owner);

-- Every version of an assistant, as it was made; deleted with it.
CREATE TABLE waystone.assistant_versions (
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
