-- Named queries. Each block starts with `-- name: NAME`; waystone.sql.queries loads them.
-- Parameters use psycopg's %(name)s style.

-- Schema versions and the migration lock (waystone._db.migrations).

-- name: create_schema_version
CREATE TABLE IF NOT EXISTS public.waystone_schema_version
    (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());

-- name: schema_version
SELECT max(version) AS version FROM public.waystone_schema_version;

-- name: stamp_schema_version
INSERT INTO public.waystone_schema_version (version) VALUES (%(version)s);

-- name: schema_present
SELECT to_regclass('public.waystone_schema_version') IS NOT NULL AS ours,
       to_regclass('public.checkpoint_migrations') IS NOT NULL AS langgraph;

-- name: schema_versions
-- Waystone's version, LangGraph's, the saver version that last set LangGraph's tables
-- up, and how many of LangGraph's tables carry the fence.
SELECT (SELECT max(version) FROM public.waystone_schema_version) AS ours,
       (SELECT max(v) FROM public.checkpoint_migrations) AS langgraph,
       (SELECT value FROM waystone.settings WHERE name = 'langgraph_set_up_by') AS set_up_by,
       (SELECT count(*) FROM pg_trigger WHERE tgname = 'waystone_fence') AS fences;

-- name: record_langgraph_set_up_by
INSERT INTO waystone.settings (name, value) VALUES ('langgraph_set_up_by', %(version)s)
ON CONFLICT (name) DO UPDATE SET value = excluded.value;

-- name: langgraph_fences
SELECT count(*) AS n FROM pg_trigger WHERE tgname = 'waystone_fence';

-- name: try_migration_lock
SELECT pg_try_advisory_lock(%(lock)s) AS ok;

-- name: migration_unlock
SELECT pg_advisory_unlock(%(lock)s) AS released;

-- name: create_run
INSERT INTO waystone.runs AS r (thread_id, agent, goal, input, start_key, reason, evidence,
                               actor, forked_from, key_namespace)
SELECT %(thread_id)s, %(agent)s, %(goal)s, %(input)s, %(start_key)s, %(reason)s,
       %(evidence)s, %(actor)s, %(forked_from)s, %(key_namespace)s
WHERE NOT EXISTS (SELECT 1 FROM waystone.thread_runs t WHERE t.start_key = %(start_key)s)
ON CONFLICT DO NOTHING
RETURNING r.thread_id, r.agent, r.state, r.goal, r.input, r.start_key, r.reason, r.evidence,
          r.lease_token, r.lease_owner, r.lease_expires_at, r.attempts, r.waiting_for,
          r.wake_at, r.forked_from, r.key_namespace, r.summary, r.pruned_at, r.created_at,
          r.updated_at, r.wait_id,
          1 AS run_number;

-- name: begin_run
-- A new run on a thread whose run ended (done or failed, its checkpoints not pruned), of
-- the same graph: the ended run is kept in thread_runs (record_transition) and the
-- thread's row becomes the new run, queued, its lease token still rising. Nothing when
-- the thread's run has not ended or the start key was used.
WITH marked AS (
    SELECT set_config('waystone.next_run', %(thread_id)s, true) AS thread_id
)
UPDATE waystone.runs r
SET state = 'queued', goal = %(goal)s, input = %(input)s, start_key = %(start_key)s,
    reason = %(reason)s, evidence = %(evidence)s, actor = %(actor)s, attempts = 0,
    lease_token = r.lease_token + 1,  -- whoever held the ended run's lease is fenced out
    lease_owner = NULL, lease_expires_at = NULL, waiting_for = NULL, wake_at = NULL,
    wait_id = NULL
FROM marked m
WHERE r.thread_id = m.thread_id AND r.state IN ('done', 'failed') AND r.pruned_at IS NULL
  AND r.agent = %(agent)s
  -- a key starts one run: one of any thread's runs, the one that ended here included
  AND NOT EXISTS (SELECT 1 FROM waystone.thread_runs t WHERE t.start_key = %(start_key)s)
  AND NOT EXISTS (SELECT 1 FROM waystone.runs x WHERE x.start_key = %(start_key)s)
RETURNING r.thread_id, r.agent, r.state, r.goal, r.input, r.start_key, r.reason, r.evidence,
    r.lease_token, r.lease_owner, r.lease_expires_at, r.attempts, r.waiting_for, r.wake_at,
    r.forked_from, r.key_namespace, r.summary, r.pruned_at, r.created_at, r.updated_at,
    r.wait_id,
    -- the runs before the one that ended (it is kept once this statement ends), it, and this
    2 + (SELECT count(*) FROM waystone.thread_runs t WHERE t.thread_id = r.thread_id)
        AS run_number;

-- name: past_run_by_start_key
SELECT thread_id, number, agent, goal, input, start_key, state, reason, evidence, attempts,
       last_event, created_at, ended_at
FROM waystone.thread_runs WHERE start_key = %(start_key)s;

-- name: past_run
-- One run of a thread that ended before its current one began.
SELECT thread_id, number, agent, goal, input, start_key, state, reason, evidence, attempts,
       last_event, created_at, ended_at
FROM waystone.thread_runs WHERE thread_id = %(thread_id)s AND number = %(number)s;

-- name: past_runs
-- The runs of a thread that ended before its current one began, in order.
SELECT thread_id, number, agent, goal, input, start_key, state, reason, evidence, attempts,
       last_event, created_at, ended_at
FROM waystone.thread_runs WHERE thread_id = %(thread_id)s ORDER BY number;

-- name: run_as_shown
-- How get_run and list_runs begin (included in them, never run alone): a thread's current
-- run, its number in the thread, and who approved the action it waits on while no worker
-- has resumed it yet (approved_by: the
-- decision recorded for its wait, not consumed; a wait named before waits had ids takes
-- any). A rejection ends the run as it is recorded, so only an approval is ever found.
SELECT r.thread_id, r.agent, r.state, r.goal, r.input, r.start_key, r.reason, r.evidence,
       r.lease_token, r.lease_owner, r.lease_expires_at, r.attempts, r.waiting_for,
       r.wake_at, r.forked_from, r.key_namespace, r.summary, r.pruned_at, r.created_at,
       r.updated_at, r.wait_id,
       (SELECT s.actor FROM waystone.signals s
        WHERE r.state = 'waiting' AND r.waiting_for = 'approval'
          AND s.thread_id = r.thread_id AND s.name = 'approval' AND s.consumed_at IS NULL
          AND (r.wait_id IS NULL OR s.dedupe_key = r.wait_id)
        ORDER BY s.id
        LIMIT 1) AS approved_by,
       1 + (SELECT count(*) FROM waystone.thread_runs t WHERE t.thread_id = r.thread_id)
           AS run_number
FROM waystone.runs r

-- name: get_run
-- include: run_as_shown
WHERE r.thread_id = %(thread_id)s;

-- name: get_run_by_start_key
SELECT r.thread_id, r.agent, r.state, r.goal, r.input, r.start_key, r.reason, r.evidence,
       r.lease_token, r.lease_owner, r.lease_expires_at, r.attempts, r.waiting_for,
       r.wake_at, r.forked_from, r.key_namespace, r.summary, r.pruned_at, r.created_at,
       r.updated_at, r.wait_id
FROM waystone.runs r WHERE r.start_key = %(start_key)s;

-- name: list_runs
-- include: run_as_shown
WHERE (%(state)s::text IS NULL OR r.state = %(state)s)
ORDER BY r.created_at DESC, r.thread_id
LIMIT %(limit)s;

-- name: transition
-- Move a run from one of the expected states; no row back means it was not in them (or
-- the lease token moved on). The trigger rejects transitions that are not allowed and
-- records the event. Leaving `running` drops the lease. With spend_signals (a run that
-- ends), in the same statement and only if the run did move, the signals it has used
-- (reserved for a wait) and the approvals it no longer waits on are consumed; a run that
-- is done takes no more signals, so every one it never used is spent too (repeats, names
-- it never waited for: undelivered for good otherwise, in the dashboard and every claim).
WITH moved AS (
    UPDATE waystone.runs r
    SET state = %(to_state)s, reason = %(reason)s, evidence = %(evidence)s, actor = %(actor)s,
        waiting_for = %(waiting_for)s,
        -- a wait's deadline (kept, or set on the database's clock, never a worker's), and
        -- the interrupt it belongs to
        wake_at = coalesce(%(wake_at)s::timestamptz,
                           clock_timestamp() + make_interval(secs => %(wait_seconds)s::float8)),
        wait_id = %(wait_id)s,
        lease_token = lease_token + CASE WHEN %(bump)s THEN 1 ELSE 0 END,
        lease_owner = CASE WHEN %(to_state)s = 'running' THEN lease_owner ELSE NULL END,
        lease_expires_at = CASE WHEN %(to_state)s = 'running' THEN lease_expires_at ELSE NULL END
    WHERE thread_id = %(thread_id)s AND state = ANY(%(from_states)s)
      AND (%(lease_token)s::bigint IS NULL OR lease_token = %(lease_token)s)
    RETURNING r.thread_id, r.agent, r.state, r.goal, r.input, r.start_key, r.reason,
        r.evidence, r.lease_token, r.lease_owner, r.lease_expires_at, r.attempts,
        r.waiting_for, r.wake_at, r.forked_from, r.key_namespace, r.summary, r.pruned_at,
        r.created_at, r.updated_at, r.wait_id
), spent AS (
    UPDATE waystone.signals s SET consumed_at = clock_timestamp()
    FROM moved m
    WHERE %(spend_signals)s AND s.thread_id = m.thread_id AND s.consumed_at IS NULL
      AND (s.reserved_for IS NOT NULL OR s.name = 'approval' OR m.state = 'done')
)
SELECT thread_id, agent, state, goal, input, start_key, reason, evidence, lease_token,
       lease_owner, lease_expires_at, attempts, waiting_for, wake_at, forked_from,
       key_namespace, summary, pruned_at, created_at, updated_at, wait_id
FROM moved;

-- name: end_run
-- A running run ends: `transition` from running under its lease, spending its signals (all
-- of them when it is done), sent to commit in the transaction of its graph's last checkpoint (see the driver). It
-- never quietly changes nothing: a run that is not running would be moved to
-- 'not running', which the transition table rejects (WS409), and a stale lease token
-- fails the checkpoint's own fence (WS410); either way the whole transaction rolls back.
WITH moved AS (
    UPDATE waystone.runs r
    SET state = CASE WHEN state = 'running' THEN %(to_state)s ELSE 'not running' END,
        reason = %(reason)s, evidence = %(evidence)s, actor = 'waystone',
        waiting_for = NULL, wake_at = NULL, wait_id = NULL, lease_owner = NULL,
        lease_expires_at = NULL
    WHERE thread_id = %(thread_id)s AND lease_token = %(lease_token)s
    RETURNING r.thread_id, r.agent, r.state, r.goal, r.input, r.start_key, r.reason,
        r.evidence, r.lease_token, r.lease_owner, r.lease_expires_at, r.attempts,
        r.waiting_for, r.wake_at, r.forked_from, r.key_namespace, r.summary, r.pruned_at,
        r.created_at, r.updated_at, r.wait_id
), spent AS (
    UPDATE waystone.signals s SET consumed_at = clock_timestamp()
    FROM moved m
    WHERE s.thread_id = m.thread_id AND s.consumed_at IS NULL
      AND (s.reserved_for IS NOT NULL OR s.name = 'approval' OR m.state = 'done')
)
SELECT thread_id, agent, state, goal, input, start_key, reason, evidence, lease_token,
       lease_owner, lease_expires_at, attempts, waiting_for, wake_at, forked_from,
       key_namespace, summary, pruned_at, created_at, updated_at, wait_id
FROM moved;

-- name: claim
-- A worker's claim: the oldest runnable run of the agents it has: queued; waiting with the
-- signal it waits for, or past its wake-up time; running with an expired lease. SKIP
-- LOCKED: concurrent workers never wait on each other (a row skipped because a statement
-- held it briefly is retried: see worker/sync.py). Each kind is found through an index (each
-- agent's first queued runs; the first run due, the first signal waited for, the first
-- lease expired), so a claim reads a handful of rows however long the backlog; the oldest
-- of those is taken. Every claim raises the lease token by one: the fencing token.
WITH heads AS (
    -- the first queued runs of each of its agents, through runs_queued_agent_idx (only
    -- that index has this order), never reading past other agents' backlog; not locked:
    -- only the one queued_for takes is
    SELECT h.thread_id
    FROM waystone.each_agent(%(agents)s::text[]) AS a(agent)
    CROSS JOIN LATERAL (
        SELECT r.thread_id
        FROM waystone.runs r
        WHERE r.state = 'queued' AND r.agent = a.agent
        ORDER BY r.updated_at, r.thread_id
        LIMIT 8  -- held by 8 claims at once (each for one statement), the claim finds
                 -- none: a worker looks again after a NOTIFY or a run (worker/sync.py)
    ) h
), queued_for AS (
    SELECT r.thread_id, r.state, r.lease_owner, r.updated_at
    FROM waystone.runs r
    WHERE r.thread_id = ANY(ARRAY(SELECT thread_id FROM heads)) AND r.state = 'queued'
    ORDER BY r.updated_at, r.thread_id
    LIMIT 1
    FOR NO KEY UPDATE SKIP LOCKED
), due AS (
    -- the first due waits of each of its agents, through runs_wake_agent_idx: never
    -- reading past another agent's overdue waits (an agent no worker serves any more)
    SELECT r.thread_id, r.state, r.lease_owner, r.updated_at
    FROM waystone.runs r
    WHERE r.thread_id = ANY(ARRAY(
            SELECT d.thread_id
            FROM waystone.each_agent(%(agents)s::text[]) AS a(agent)
            CROSS JOIN LATERAL (
                SELECT x.thread_id FROM waystone.runs x
                WHERE x.state = 'waiting' AND x.agent = a.agent
                  AND x.wake_at <= statement_timestamp()
                ORDER BY x.wake_at
                LIMIT 8
            ) d))
      -- not an index condition: only the primary key finds these few, whatever plan
      -- Postgres reuses (another could read every agent's overdue waits)
      AND (r.state = 'waiting' AND r.wake_at <= statement_timestamp()) IS TRUE
    ORDER BY r.wake_at
    LIMIT 1
    FOR NO KEY UPDATE SKIP LOCKED
), signalled AS (
    SELECT r.thread_id, r.state, r.lease_owner, r.updated_at
    FROM waystone.signals s JOIN waystone.runs r ON r.thread_id = s.thread_id
    WHERE s.consumed_at IS NULL
      AND r.state = 'waiting' AND s.name = r.waiting_for
      AND r.agent = ANY(%(agents)s::text[])
    ORDER BY s.id
    LIMIT 1
    FOR NO KEY UPDATE OF r SKIP LOCKED
), expired AS (
    -- the first expired leases of each of its agents, through runs_lease_agent_idx (a
    -- lease given back expires at once; one never set counts as expired, first)
    SELECT r.thread_id, r.state, r.lease_owner, r.updated_at
    FROM waystone.runs r
    WHERE r.thread_id = ANY(ARRAY(
            SELECT e.thread_id
            FROM waystone.each_agent(%(agents)s::text[]) AS a(agent)
            CROSS JOIN LATERAL (
                SELECT x.thread_id FROM waystone.runs x
                WHERE x.state = 'running' AND x.agent = a.agent
                  AND coalesce(x.lease_expires_at, '-infinity'::timestamptz)
                      < statement_timestamp()
                ORDER BY coalesce(x.lease_expires_at, '-infinity'::timestamptz)
                LIMIT 8
            ) e))
      AND (r.state = 'running'
           AND coalesce(r.lease_expires_at, '-infinity'::timestamptz) < statement_timestamp())
          IS TRUE  -- not an index condition (see due)
    ORDER BY r.lease_expires_at NULLS FIRST
    LIMIT 1
    FOR NO KEY UPDATE SKIP LOCKED
), candidate AS (
    SELECT thread_id, state AS prev_state, lease_owner AS prev_owner, updated_at FROM queued_for
    UNION ALL SELECT thread_id, state, lease_owner, updated_at FROM due
    UNION ALL SELECT thread_id, state, lease_owner, updated_at FROM signalled
    UNION ALL SELECT thread_id, state, lease_owner, updated_at FROM expired
    ORDER BY updated_at
    LIMIT 1
)
-- include: claim_take

-- name: claim_named
-- `waystone run THREAD_ID`'s claim: that run, if it is runnable (as above, or held by a
-- local process that died: dead_owner) and its agent one of these (NULL: any). A query of
-- its own, so its plan is the primary key's and nothing else.
WITH candidate AS (
    SELECT r.thread_id, r.state AS prev_state, r.lease_owner AS prev_owner, r.updated_at
    FROM waystone.runs r
    WHERE r.thread_id = %(thread_id)s
      AND (%(agents)s::text[] IS NULL OR r.agent = ANY(%(agents)s))
      AND (r.state = 'queued'
           OR (r.state = 'waiting'
               AND (r.wake_at <= clock_timestamp()
                    OR EXISTS (SELECT 1 FROM waystone.signals s
                               WHERE s.thread_id = r.thread_id AND s.consumed_at IS NULL
                                 AND s.name = r.waiting_for)))
           OR (r.state = 'running'
               AND (r.lease_expires_at IS NULL OR r.lease_expires_at < clock_timestamp()
                    OR r.lease_owner = %(dead_owner)s)))
    FOR NO KEY UPDATE SKIP LOCKED  -- not blocked by the key-share locks of FK inserts
)
-- include: claim_take

-- name: claiming
-- Before Runtime.invoke's create_run, in its transaction: the run it creates is claimed
-- in the same transaction, so its insert wakes no worker (notify_runnable).
SELECT set_config('waystone.claiming', %(thread_id)s, true);

-- name: claim_created
-- `Runtime.invoke`'s claim, pipelined after create_run in its transaction: the run that
-- transaction inserted (its xmin), never one whose thread id was already taken.
WITH candidate AS (
    SELECT r.thread_id, r.state AS prev_state, r.lease_owner AS prev_owner, r.updated_at
    FROM waystone.runs r
    WHERE r.thread_id = %(thread_id)s AND r.state = 'queued'
      AND r.xmin = pg_current_xact_id()::xid
)
-- include: claim_take

-- name: claim_take
-- How both claims end (included in them, never run alone): the candidate becomes running
-- under a new lease.
UPDATE waystone.runs r
SET state = 'running',
    reason = CASE WHEN c.prev_state = 'running' THEN r.reason ELSE %(reason)s END,
    evidence = CASE WHEN c.prev_state = 'running' THEN r.evidence
                    ELSE jsonb_build_object('owner', %(owner)s::text) END,
    actor = %(owner)s,
    lease_token = r.lease_token + 1, lease_owner = %(owner)s,
    lease_expires_at = clock_timestamp() + make_interval(secs => %(lease_seconds)s),
    attempts = r.attempts + 1
FROM candidate c
WHERE r.thread_id = c.thread_id
RETURNING r.thread_id, r.agent, r.state, r.goal, r.input, r.start_key, r.reason, r.evidence,
    r.lease_token, r.lease_owner, r.lease_expires_at, r.attempts, r.waiting_for, r.wake_at,
    r.forked_from, r.key_namespace, r.summary, r.pruned_at, r.created_at, r.updated_at,
    r.wait_id,
    c.prev_state, c.prev_owner,
    -- whether the deadline of its wait (wait_id's) has passed, by the database's clock
    -- (never a worker's); taken over from a worker that claimed it, too
    coalesce(r.wake_at <= clock_timestamp(), false) AS deadline_passed,
    -- whether it has checkpoints, for a run that was queued (no writer can be under way);
    -- NULL (unknown: read them) for a takeover
    CASE WHEN c.prev_state = 'queued'
         THEN EXISTS (SELECT 1 FROM checkpoints cp WHERE cp.thread_id = r.thread_id) END
        AS started,
    -- its number in the thread: the runs that ended before it, and itself
    1 + (SELECT count(*) FROM waystone.thread_runs t WHERE t.thread_id = r.thread_id)
        AS run_number,
    -- whether a client streams it (waystone._streams): its live events are logged
    EXISTS (SELECT 1 FROM waystone.stream_logs l
            WHERE l.thread_id = r.thread_id
              AND l.number = 1 + (SELECT count(*) FROM waystone.thread_runs t
                                  WHERE t.thread_id = r.thread_id)) AS logged;

-- name: set_lease_token
-- The lease token this transaction writes under: the fence triggers check it.
SELECT set_config('waystone.lease_token', %(lease_token)s, true);

-- name: holds_lease
-- Whether a run is still running under this lease token (not cancelled, not taken over).
SELECT 1 AS held FROM waystone.runs
WHERE thread_id = %(thread_id)s AND lease_token = %(lease_token)s AND state = 'running';

-- name: release
-- Give the lease back without a state change (a worker shutting down): the next claim
-- takes the run at once, without waiting for the expiry.
UPDATE waystone.runs
SET lease_owner = NULL, lease_expires_at = clock_timestamp()
WHERE thread_id = %(thread_id)s AND lease_token = %(lease_token)s AND state = 'running'
RETURNING thread_id;

-- name: lease_of
-- A running run's lease: who holds it and the seconds until it expires (negative: since it
-- expired), by the database's clock, which judges it (never the reader's).
SELECT lease_owner, lease_expires_at,
       extract(epoch FROM lease_expires_at - clock_timestamp())::float8 AS expires_in
FROM waystone.runs
WHERE thread_id = %(thread_id)s AND state = 'running';

-- name: database_ok
-- A round trip: what a health check asks of Postgres.
SELECT true AS ok;

-- name: lease_owners
-- Who holds an unexpired lease on a running run of these agents (one row a worker), each
-- agent's through runs_lease_agent_idx: the owners a worker asks whether they are gone.
SELECT DISTINCT r.lease_owner
FROM waystone.each_agent(%(agents)s::text[]) AS a(agent)
JOIN waystone.runs r ON r.agent = a.agent
WHERE r.state = 'running' AND r.lease_owner IS NOT NULL
  AND coalesce(r.lease_expires_at, '-infinity'::timestamptz) > clock_timestamp();

-- name: held_leases
-- The running runs of these agents under a lease that has not expired, those of the owners
-- known to be gone (%(dead)s) first, then the soonest to expire, by the database's clock:
-- what a worker run --until-idle waits for.
SELECT h.thread_id, h.lease_token, h.lease_owner, h.lease_expires_at, h.dead,
       extract(epoch FROM h.lease_expires_at - clock_timestamp())::float8 AS expires_in
FROM waystone.each_agent(%(agents)s::text[]) AS a(agent)
CROSS JOIN LATERAL (
    SELECT r.thread_id, r.lease_token, r.lease_owner, r.lease_expires_at,
           coalesce(r.lease_owner = ANY(%(dead)s::text[]), false) AS dead
    FROM waystone.runs r
    WHERE r.state = 'running' AND r.agent = a.agent
      AND coalesce(r.lease_expires_at, '-infinity'::timestamptz) > clock_timestamp()
    ORDER BY 5 DESC, coalesce(r.lease_expires_at, '-infinity'::timestamptz)
    LIMIT %(limit)s
) h
ORDER BY h.dead DESC, h.lease_expires_at
LIMIT %(limit)s;

-- name: next_wake
-- Seconds until the first waiting run of these agents is due, by the database's clock
-- (never a worker's): each agent's first deadline, through runs_wake_agent_idx.
SELECT extract(epoch FROM min(w.wake_at) - clock_timestamp())::float8 AS due_in
FROM waystone.each_agent(%(agents)s::text[]) AS a(agent)
CROSS JOIN LATERAL (
    SELECT r.wake_at FROM waystone.runs r
    WHERE r.state = 'waiting' AND r.agent = a.agent AND r.wake_at IS NOT NULL
    ORDER BY r.wake_at
    LIMIT 1
) w;

-- name: create_cron
INSERT INTO waystone.crons (cron_id, agent, thread_id, owner, schedule, timezone, input,
                            metadata, on_run_completed, end_time, enabled, next_run_date)
VALUES (%(cron_id)s, %(agent)s, %(thread_id)s, %(owner)s, %(schedule)s, %(timezone)s,
        %(input)s, %(metadata)s, %(on_run_completed)s, %(end_time)s, %(enabled)s,
        %(next_run_date)s)
RETURNING cron_id, agent, thread_id, owner, schedule, timezone, input, metadata,
          on_run_completed, end_time, enabled, next_run_date, created_at, updated_at;

-- name: own_thread
-- A stateless cron's tick thread is its cron's owner's, as a thread that owner made.
INSERT INTO waystone.thread_owners (thread_id, owner) VALUES (%(thread_id)s, %(owner)s)
ON CONFLICT DO NOTHING;

-- name: get_cron
SELECT cron_id, agent, thread_id, owner, schedule, timezone, input, metadata,
       on_run_completed, end_time, enabled, next_run_date, created_at, updated_at
FROM waystone.crons WHERE cron_id = %(cron_id)s;

-- name: update_cron
-- A person's change: what is given replaces what was (updated_at wakes the tickers).
UPDATE waystone.crons
SET schedule = %(schedule)s, timezone = %(timezone)s, input = %(input)s,
    metadata = %(metadata)s, on_run_completed = %(on_run_completed)s,
    end_time = %(end_time)s, enabled = %(enabled)s, next_run_date = %(next_run_date)s,
    updated_at = clock_timestamp()
WHERE cron_id = %(cron_id)s
RETURNING cron_id, agent, thread_id, owner, schedule, timezone, input, metadata,
          on_run_completed, end_time, enabled, next_run_date, created_at, updated_at;

-- name: delete_cron
-- Its ticks (cron_ticks) and the runs they started stay: they are what happened.
DELETE FROM waystone.crons WHERE cron_id = %(cron_id)s RETURNING cron_id;

-- name: list_crons
-- Crons by graph, thread and whether enabled (their metadata is filtered by the caller:
-- it may be sealed), in the order asked (the column is one of a fixed few, named here).
SELECT cron_id, agent, thread_id, owner, schedule, timezone, input, metadata,
       on_run_completed, end_time, enabled, next_run_date, created_at, updated_at
FROM waystone.crons
WHERE (%(agent)s::text IS NULL OR agent = %(agent)s)
  AND (%(owner)s::text IS NULL OR owner = %(owner)s)
  AND (%(thread_id)s::text IS NULL OR thread_id = %(thread_id)s)
  AND (%(enabled)s::boolean IS NULL OR enabled = %(enabled)s)
ORDER BY CASE WHEN %(desc)s THEN
             CASE %(sort_by)s WHEN 'cron_id' THEN cron_id WHEN 'assistant_id' THEN agent
                              WHEN 'thread_id' THEN thread_id END END DESC,
         CASE WHEN NOT %(desc)s THEN
             CASE %(sort_by)s WHEN 'cron_id' THEN cron_id WHEN 'assistant_id' THEN agent
                              WHEN 'thread_id' THEN thread_id END END,
         CASE WHEN %(desc)s THEN
             CASE %(sort_by)s WHEN 'next_run_date' THEN next_run_date
                              WHEN 'end_time' THEN end_time WHEN 'updated_at' THEN updated_at
                              WHEN 'created_at' THEN created_at END END DESC,
         CASE WHEN NOT %(desc)s THEN
             CASE %(sort_by)s WHEN 'next_run_date' THEN next_run_date
                              WHEN 'end_time' THEN end_time WHEN 'updated_at' THEN updated_at
                              WHEN 'created_at' THEN created_at END END,
         cron_id
LIMIT %(limit)s;

-- name: listen
LISTEN {channel};

-- name: now
SELECT clock_timestamp() AS now;

-- name: claim_due_cron
-- One due cron of these graphs, locked until the ticker's transaction ends (its run made
-- and its next tick set, or nothing): another ticker passes it by, and a delete waits.
SELECT c.cron_id, c.agent, c.thread_id, c.owner, c.schedule, c.timezone, c.input,
       c.metadata, c.on_run_completed, c.end_time, c.enabled, c.next_run_date, c.created_at,
       c.updated_at,
       clock_timestamp() AS now
FROM waystone.crons c
WHERE c.enabled AND c.agent = ANY(%(agents)s::text[])
  AND c.next_run_date <= clock_timestamp()
  AND (c.end_time IS NULL OR c.next_run_date <= c.end_time)
ORDER BY c.next_run_date
LIMIT 1
FOR UPDATE SKIP LOCKED;

-- name: cron_ticked
UPDATE waystone.crons SET next_run_date = %(next_run_date)s
WHERE cron_id = %(cron_id)s;

-- name: tick_taken
SELECT 1 FROM waystone.cron_ticks WHERE cron_id = %(cron_id)s AND tick_at = %(tick_at)s;

-- name: record_tick
INSERT INTO waystone.cron_ticks (cron_id, tick_at, outcome, thread_id, start_key, reason,
                                 missed, missed_from, ticked_by)
VALUES (%(cron_id)s, %(tick_at)s, %(outcome)s, %(thread_id)s, %(start_key)s, %(reason)s,
        %(missed)s, %(missed_from)s, %(ticked_by)s);

-- name: next_cron
-- Seconds until the first enabled cron of these graphs is due, by the database's clock.
SELECT extract(epoch FROM min(c.next_run_date) - clock_timestamp())::float8 AS due_in
FROM waystone.crons c
WHERE c.enabled AND c.agent = ANY(%(agents)s::text[])
  AND (c.end_time IS NULL OR c.next_run_date <= c.end_time);

-- name: webhook_lock_run
-- The thread's run, locked against its stop until a webhook's arming commits: a stop
-- that commits first is seen (and the webhook made due at once), one that comes after
-- waits for the armed row and finds it.
SELECT r.state, r.reason, 1 + (SELECT count(*) FROM waystone.thread_runs t
                               WHERE t.thread_id = r.thread_id) AS number
FROM waystone.runs r WHERE r.thread_id = %(thread_id)s FOR SHARE;

-- name: arm_webhook
INSERT INTO waystone.webhooks (thread_id, run_number, url)
VALUES (%(thread_id)s, %(number)s, %(url)s)
RETURNING id;

-- name: webhook_due_now
-- A run that stopped before its webhook was armed: due at once, as the stop's trigger
-- would have made it (a run that ended before the thread's current one: its own end,
-- the thread's latest checkpoint being another run's).
UPDATE waystone.webhooks w
SET status = 'due', due_at = clock_timestamp(), next_at = clock_timestamp(),
    run_state = coalesce(t.state, %(state)s), run_reason = coalesce(t.reason, %(reason)s),
    checkpoint_id = CASE WHEN t.number IS NULL THEN
        (SELECT c.checkpoint_id FROM public.checkpoints c
         WHERE c.thread_id = w.thread_id AND c.checkpoint_ns = ''
         ORDER BY c.checkpoint_id DESC LIMIT 1) END
FROM (SELECT 1) one
LEFT JOIN waystone.thread_runs t ON t.thread_id = %(thread_id)s AND t.number = %(number)s
WHERE w.id = %(id)s;

-- name: notify_webhook
SELECT pg_notify('waystone_webhook', %(thread_id)s);

-- name: disarm_webhook
DELETE FROM waystone.webhooks WHERE id = %(id)s AND status = 'armed';

-- name: claim_webhook
-- The first due delivery no other worker holds, leased to %(owner)s.
UPDATE waystone.webhooks w
SET lease_token = w.lease_token + 1, lease_owner = %(owner)s, attempts = w.attempts + 1,
    lease_until = clock_timestamp() + make_interval(secs => %(lease_s)s)
WHERE w.id = (SELECT id FROM waystone.webhooks
              WHERE status = 'due' AND next_at <= clock_timestamp()
                AND (lease_until IS NULL OR lease_until <= clock_timestamp())
              ORDER BY next_at LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING w.id, w.thread_id, w.run_number, w.url, w.run_state, w.run_reason,
          w.checkpoint_id, w.due_at, w.attempts, w.lease_token, w.lease_until;

-- name: webhook_run
-- The run a delivery is for: the thread's current one, or one that ended before it.
SELECT agent, created_at FROM waystone.thread_runs WHERE thread_id = %(thread_id)s
  AND number = %(number)s
UNION ALL
SELECT agent, created_at FROM waystone.runs WHERE thread_id = %(thread_id)s
LIMIT 1;

-- name: next_webhook_due
SELECT extract(epoch FROM min(greatest(next_at, coalesce(lease_until, next_at)))
               - clock_timestamp()) AS seconds
FROM waystone.webhooks WHERE status = 'due';

-- name: finish_webhook
-- An outcome lands only under the lease it was claimed with: a worker that lost its
-- lease (paused past it while another one took the delivery over) records nothing.
UPDATE waystone.webhooks
SET status = %(status)s, last_error = %(error)s, lease_until = NULL, lease_owner = NULL,
    next_at = clock_timestamp() + make_interval(secs => %(delay_s)s),
    done_at = CASE WHEN %(status)s = 'due' THEN NULL ELSE clock_timestamp() END
WHERE id = %(id)s AND lease_token = %(lease_token)s AND status = 'due'
RETURNING id;

-- name: bounded
-- This transaction's waits for a lock and its statements are cut off after %(limit)s
-- (e.g. '250ms'): for a heartbeat, which must not hold up the others.
SELECT set_config('lock_timeout', %(limit)s, true),
       set_config('statement_timeout', %(limit)s, true);

-- name: heartbeat
UPDATE waystone.runs
SET lease_expires_at = clock_timestamp() + make_interval(secs => %(lease_seconds)s)
WHERE thread_id = %(thread_id)s AND lease_token = %(lease_token)s AND state = 'running'
RETURNING lease_token;

-- name: insert_event
INSERT INTO waystone.run_events (thread_id, kind, reason, evidence, actor, lease_token)
VALUES (%(thread_id)s, %(kind)s, %(reason)s, %(evidence)s, %(actor)s, %(lease_token)s);

-- name: list_events
SELECT id, thread_id, kind, from_state, to_state, reason, evidence, actor, lease_token,
       created_at
FROM waystone.run_events WHERE thread_id = %(thread_id)s ORDER BY id;

-- name: record_signal
-- Only while the thread's run can still use it: a run that failed had its signals settled
-- as it failed (settle_signals), and one recorded after would stay pending for good. FOR
-- SHARE waits for a stop in progress, and then sees the run as it left it.
INSERT INTO waystone.signals (thread_id, name, dedupe_key, payload, actor)
SELECT %(thread_id)s, %(name)s, %(dedupe_key)s, %(payload)s, %(actor)s
FROM waystone.runs r
WHERE r.thread_id = %(thread_id)s AND r.state NOT IN ('done', 'failed')
FOR SHARE OF r
ON CONFLICT (thread_id, name, dedupe_key) DO NOTHING
RETURNING id, thread_id, name, dedupe_key, payload, actor, created_at, reserved_for,
          consumed_at;

-- name: get_signal
SELECT id, thread_id, name, dedupe_key, payload, actor, created_at, reserved_for,
       consumed_at
FROM waystone.signals
WHERE thread_id = %(thread_id)s AND name = %(name)s AND dedupe_key = %(dedupe_key)s;

-- name: pending_signals
SELECT id, thread_id, name, dedupe_key, payload, actor, created_at, reserved_for,
       consumed_at
FROM waystone.signals
WHERE thread_id = %(thread_id)s AND consumed_at IS NULL
ORDER BY id;

-- name: consume_signal
UPDATE waystone.signals SET consumed_at = clock_timestamp()
WHERE id = %(id)s AND consumed_at IS NULL
RETURNING id;

-- name: refuse_signal
-- A value interrupt() refused: spent, and its interrupt's key freed for the value given next.
UPDATE waystone.signals
SET consumed_at = clock_timestamp(), dedupe_key = dedupe_key || '#refused-' || id
WHERE id = %(id)s AND consumed_at IS NULL
RETURNING id;

-- name: reopen_settled_signals
-- A stopped run requeued: the signals its stop settled (the last signals-settled event
-- since its last transition) are pending again, for the run to use as it goes on.
UPDATE waystone.signals s SET consumed_at = NULL
WHERE s.thread_id = %(thread_id)s AND s.consumed_at IS NOT NULL
  AND s.id IN (
    SELECT (item ->> 'id')::bigint
    FROM waystone.run_events e, jsonb_array_elements(e.evidence -> 'signals') AS item
    WHERE e.id = (SELECT max(x.id) FROM waystone.run_events x
                  WHERE x.thread_id = %(thread_id)s AND x.kind = 'signals-settled')
      AND e.id > (SELECT coalesce(max(t.id), 0) FROM waystone.run_events t
                  WHERE t.thread_id = %(thread_id)s AND t.kind = 'transition'
                    AND t.to_state <> 'failed'))
RETURNING s.id;

-- name: reserve_signal
UPDATE waystone.signals SET reserved_for = %(interrupt_id)s
WHERE id = %(id)s AND consumed_at IS NULL
RETURNING id;

-- name: get_effect
SELECT key, thread_id, ordinal, tool, args, status, attempts, receipt, confirmation, error,
       created_at, updated_at, tool_call_id
FROM waystone.effects WHERE key = %(key)s;

-- name: list_effects
SELECT key, thread_id, ordinal, tool, args, status, attempts, receipt, confirmation, error,
       created_at, updated_at, tool_call_id
FROM waystone.effects WHERE thread_id = %(thread_id)s ORDER BY ordinal, created_at;

-- name: effects_of_tool_calls
-- The effects made for the given tool calls of a thread; and, of the thread's effects
-- made since %(since)s for no tool call that it knows (older rows), those of the tools.
SELECT key, thread_id, ordinal, tool, args, status, attempts, receipt, confirmation,
       error, created_at, updated_at, tool_call_id
FROM waystone.effects
WHERE thread_id = %(thread_id)s AND tool_call_id = ANY(%(tool_call_ids)s)
UNION ALL
SELECT key, thread_id, ordinal, tool, args, status, attempts, receipt, confirmation,
       error, created_at, updated_at, tool_call_id
FROM waystone.effects
WHERE thread_id = %(thread_id)s AND tool_call_id IS NULL AND tool = ANY(%(tools)s)
  AND created_at > %(since)s;

-- name: record_intent
-- The intent is committed before the call; a second intent for the same key (a retry)
-- only counts the attempt. Each one moves the effect's deadline (deadline_of).
WITH counted AS (
    INSERT INTO waystone.effects
        (key, thread_id, ordinal, tool, args, status, attempts, tool_call_id)
    VALUES (%(key)s, %(thread_id)s, %(ordinal)s, %(tool)s, %(args)s, 'intent', 1,
            %(tool_call_id)s)
    ON CONFLICT (key) DO UPDATE
    SET attempts = waystone.effects.attempts + 1, updated_at = clock_timestamp(),
        status = CASE WHEN waystone.effects.status IN ('unknown', 'intent', 'interrupted',
                                                       'absent')
                      THEN 'intent' ELSE waystone.effects.status END
    RETURNING key, thread_id, ordinal, tool, args, status, attempts, receipt, confirmation,
              error, created_at, updated_at, tool_call_id
), deadline AS (
-- include: deadline_of
)
SELECT key, thread_id, ordinal, tool, args, status, attempts, receipt, confirmation, error,
       created_at, updated_at, tool_call_id
FROM counted;

-- name: deadline_of
-- How the intents end (included in them, never run alone): the call the intent is for
-- carries the deadline of its attempt, the time it was counted plus the tool's timeout;
-- the effect keeps the latest one any process sent. Only for a provider that does not
-- deduplicate (a timeout is given): for one that does, a second call is harmless.
INSERT INTO waystone.effect_deadlines (key, deadline)
SELECT key, updated_at + make_interval(secs => %(timeout_s)s::float8) FROM counted
WHERE %(timeout_s)s::float8 IS NOT NULL
ON CONFLICT (key) DO UPDATE
SET deadline = greatest(waystone.effect_deadlines.deadline, EXCLUDED.deadline)

-- name: open_intent
-- The first intent for a key, committed before the first call (fresh = true); or the row
-- already there (a resumed run, a fork), unchanged (fresh = false). One round trip.
WITH counted AS (
    INSERT INTO waystone.effects
        (key, thread_id, ordinal, tool, args, status, attempts, tool_call_id)
    VALUES (%(key)s, %(thread_id)s, %(ordinal)s, %(tool)s, %(args)s, 'intent', 1,
            %(tool_call_id)s)
    ON CONFLICT (key) DO NOTHING
    RETURNING key, thread_id, ordinal, tool, args, status, attempts, receipt, confirmation,
              error, created_at, updated_at, tool_call_id
), deadline AS (
-- include: deadline_of
)
SELECT key, thread_id, ordinal, tool, args, status, attempts, receipt, confirmation, error,
       created_at, updated_at, tool_call_id,
       true AS fresh
FROM counted
UNION ALL
SELECT key, thread_id, ordinal, tool, args, status, attempts, receipt, confirmation, error,
       created_at, updated_at, tool_call_id,
       false AS fresh
FROM waystone.effects
WHERE key = %(key)s AND NOT EXISTS (SELECT 1 FROM counted);

-- name: ride_intent
-- The first intent for a key, committed in the transaction of the run's next checkpoint
-- (authorize's, once it approves the action): the row when this inserted it; none when
-- the key was there already (a fork and its origin share keys), which it leaves as it is.
INSERT INTO waystone.effects
    (key, thread_id, ordinal, tool, args, status, attempts, tool_call_id)
VALUES (%(key)s, %(thread_id)s, %(ordinal)s, %(tool)s, %(args)s, 'intent', 1,
        %(tool_call_id)s)
ON CONFLICT (key) DO NOTHING
RETURNING key, thread_id, ordinal, tool, args, status, attempts, receipt, confirmation,
          error, created_at, updated_at, tool_call_id;

-- name: hand_back_intents
-- A run that stopped between authorize and execute (drained) hands back the intents that
-- rode with authorize's checkpoint and that no execute took: the provider was never
-- called for them, so they count no attempt, and the next execute's is the first. Each
-- is noted on the run's history, in the same statement.
WITH handed AS (
    UPDATE waystone.effects
    SET attempts = 0, updated_at = clock_timestamp()
    WHERE key = ANY(%(keys)s) AND thread_id = %(thread_id)s AND status = 'intent'
      AND attempts = 1
    RETURNING key, tool
), noted AS (
    INSERT INTO waystone.run_events (thread_id, kind, reason, evidence, actor, lease_token)
    SELECT %(thread_id)s, 'intent-handed-back',
           'stopped before execute: ' || tool || ' was not called, so this counts no attempt',
           jsonb_build_object('key', key, 'tool', tool), 'waystone', %(lease_token)s
    FROM handed
)
SELECT key FROM handed;

-- name: update_effect
UPDATE waystone.effects
SET status = %(status)s,
    receipt = coalesce(%(receipt)s, receipt),
    confirmation = coalesce(%(confirmation)s, confirmation),
    error = %(error)s,
    updated_at = clock_timestamp()
WHERE key = %(key)s
RETURNING key, thread_id, ordinal, tool, args, status, attempts, receipt, confirmation,
          error, created_at, updated_at, tool_call_id;

-- name: update_effect_noted
-- update_effect plus its event on the run's history, in one statement: the event is
-- written only if the effect was.
WITH changed AS (
    UPDATE waystone.effects
    SET status = %(status)s,
        receipt = coalesce(%(receipt)s, receipt),
        confirmation = coalesce(%(confirmation)s, confirmation),
        error = %(error)s,
        updated_at = clock_timestamp()
    WHERE key = %(key)s
    RETURNING key, thread_id, ordinal, tool, args, status, attempts, receipt, confirmation,
              error, created_at, updated_at, tool_call_id
), noted AS (
    INSERT INTO waystone.run_events (thread_id, kind, reason, evidence, actor, lease_token)
    SELECT %(thread_id)s, %(kind)s, %(reason)s, %(evidence)s, 'waystone', %(lease_token)s
    FROM changed
)
SELECT key, thread_id, ordinal, tool, args, status, attempts, receipt, confirmation, error,
       created_at, updated_at, tool_call_id
FROM changed;

-- name: interrupt_effect
-- The call raised interrupt() (or another of LangGraph's control-flow exceptions): it did
-- not finish, and counts no attempt; the node runs again on resume and makes it again
-- under its key. Only an open intent changes; its event goes in the same statement.
WITH changed AS (
    UPDATE waystone.effects
    SET status = 'interrupted', attempts = greatest(attempts - 1, 0),
        updated_at = clock_timestamp()
    WHERE key = %(key)s AND status = 'intent'
    RETURNING key, thread_id, ordinal, tool, args, status, attempts, receipt, confirmation,
              error, created_at, updated_at
), noted AS (
    INSERT INTO waystone.run_events (thread_id, kind, reason, evidence, actor, lease_token)
    SELECT %(thread_id)s, 'effect-interrupted', %(reason)s, %(evidence)s, 'waystone',
           %(lease_token)s
    FROM changed
)
SELECT key, thread_id, ordinal, tool, args, status, attempts, receipt, confirmation, error,
       created_at, updated_at
FROM changed;

-- name: reset_effects_for_requeue
-- A person requeued the run: unfinished effects get a fresh retry budget, and a recorded
-- failure becomes an intent again, to be reconciled (lookup or key) before any new call.
UPDATE waystone.effects
SET status = CASE WHEN status = 'failed' THEN 'intent' ELSE status END,
    attempts = 0,
    error = %(note)s || coalesce(' (was: ' || error || ')', ''),
    updated_at = clock_timestamp()
WHERE thread_id = %(thread_id)s AND status IN ('intent', 'unknown', 'failed')
  -- the current run's: an earlier run's of the thread are its history, left as they are
  AND created_at >= (SELECT r.created_at FROM waystone.runs r WHERE r.thread_id = %(thread_id)s)
RETURNING key, status;

-- name: settle_effect
-- A person who checked the provider settled an open effect of the run's current run, while
-- nobody drives it: 'confirmed' with the receipt they give (the call is not made again) or
-- 'absent' (it is made again under its key, its retry budget fresh). Its event goes in the
-- same statement; nothing changes when the effect or the run moved on meanwhile.
WITH changed AS (
    UPDATE waystone.effects e
    SET status = %(status)s,
        receipt = coalesce(%(receipt)s, e.receipt),
        confirmation = %(confirmation)s,
        attempts = CASE WHEN %(status)s = 'absent' THEN 0 ELSE e.attempts END,
        error = NULL,
        updated_at = clock_timestamp()
    FROM waystone.runs r
    WHERE e.key = %(key)s AND e.thread_id = %(thread_id)s AND r.thread_id = e.thread_id
      AND e.status IN ('intent', 'unknown', 'failed', 'interrupted')
      AND r.state IN ('failed', 'needs-human')
      AND e.created_at >= r.created_at
    RETURNING e.key, e.tool, e.status
), noted AS (
    INSERT INTO waystone.run_events (thread_id, kind, reason, evidence, actor)
    SELECT %(thread_id)s, 'effect-settled', %(reason)s, %(evidence)s, %(actor)s FROM changed
)
SELECT key, tool, status FROM changed;

-- name: late_receipt_fence
-- Before late_receipt, in its transaction: write under the run's current lease token. The
-- only write a process may make after losing a run's lease, because it states a fact (the
-- provider applied the effect) and late_receipt changes nothing else.
SELECT set_config('waystone.lease_token', lease_token::text, true) AS token
FROM waystone.runs WHERE thread_id = %(thread_id)s;

-- name: late_receipt
-- The receipt of an effect applied by a process that lost the run's lease (a cancel, a
-- takeover) while the call was under way: recorded on an effect still waiting for its
-- outcome (never over one reconciled since), with its event, so the history shows it.
WITH changed AS (
    UPDATE waystone.effects
    SET status = 'applied', receipt = %(receipt)s, error = NULL, updated_at = clock_timestamp()
    WHERE key = %(key)s AND thread_id = %(thread_id)s AND status IN ('intent', 'unknown')
    RETURNING key, tool
), noted AS (
    INSERT INTO waystone.run_events (thread_id, kind, reason, evidence, actor)
    SELECT %(thread_id)s, 'late-receipt',
           tool || ' was applied by a process that had lost the run''s lease during the call',
           jsonb_build_object('key', key, 'tool', tool, 'receipt', %(receipt)s::jsonb), 'waystone'
    FROM changed
)
SELECT key FROM changed;

-- name: effect_deadline_in
-- Seconds until the latest deadline a call of the effect was sent with has passed, on the
-- database's clock (not this host's); for calls of a version that kept none, the time its
-- row last changed plus this process's timeout.
SELECT extract(epoch FROM coalesce(d.deadline, e.updated_at + make_interval(secs => %(timeout_s)s))
                          - clock_timestamp())::float8 AS due_in
FROM waystone.effects e LEFT JOIN waystone.effect_deadlines d ON d.key = e.key
WHERE e.key = %(key)s;

-- name: checkpoint_by_id_where
-- Ends LangGraph's SELECT_SQL as its own aget_tuple does (the async saver's read of one
-- checkpoint): the checkpoint named.
WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s

-- name: latest_checkpoint_where
-- As checkpoint_by_id_where: the thread's newest checkpoint in the namespace.
WHERE thread_id = %s AND checkpoint_ns = %s ORDER BY checkpoint_id DESC LIMIT 1

-- name: has_checkpoint
-- Whether a run has the checkpoint a fork names.
SELECT 1 AS found FROM public.checkpoints WHERE thread_id = %(thread_id)s AND checkpoint_id = %(at)s
LIMIT 1;

-- name: copy_checkpoints
-- Copy a thread's checkpoints (up to and including %(until)s, when given) to another.
INSERT INTO public.checkpoints
    (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata)
SELECT %(target)s, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata
FROM public.checkpoints
WHERE thread_id = %(source)s AND (%(until)s::text IS NULL OR checkpoint_id <= %(until)s)
ON CONFLICT DO NOTHING;

-- name: copy_checkpoint_blobs
INSERT INTO public.checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob)
SELECT %(target)s, checkpoint_ns, channel, version, type, blob
FROM public.checkpoint_blobs WHERE thread_id = %(source)s
ON CONFLICT DO NOTHING;

-- name: copy_checkpoint_writes
INSERT INTO public.checkpoint_writes
    (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob, task_path)
SELECT %(target)s, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob, task_path
FROM public.checkpoint_writes
WHERE thread_id = %(source)s AND (%(until)s::text IS NULL OR checkpoint_id <= %(until)s)
ON CONFLICT DO NOTHING;

-- name: delete_writes_for_runs
DELETE FROM public.checkpoint_writes w
USING public.checkpoints c
WHERE c.metadata->>'run_id' = ANY(%(run_ids)s)
  AND w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns
  AND w.checkpoint_id = c.checkpoint_id;

-- name: delete_checkpoints_for_runs
DELETE FROM public.checkpoints WHERE metadata->>'run_id' = ANY(%(run_ids)s);

-- name: prune_candidates
-- Runs that ended (%(ended)s) more than %(age)s ago and still have their checkpoints.
SELECT r.thread_id, r.agent, r.state, r.updated_at,
       (SELECT count(*) FROM public.checkpoints c WHERE c.thread_id = r.thread_id) AS checkpoints
FROM waystone.runs r
WHERE r.state = ANY(%(ended)s) AND r.pruned_at IS NULL
  AND r.updated_at < clock_timestamp() - %(age)s::interval
ORDER BY r.updated_at
LIMIT %(limit)s;

-- name: mark_pruned
-- Only while it has still ended (a run requeued meanwhile is active again).
UPDATE waystone.runs SET summary = %(summary)s, pruned_at = clock_timestamp()
WHERE thread_id = %(thread_id)s AND state = ANY(%(ended)s) AND pruned_at IS NULL
RETURNING thread_id;

-- name: open_web_session
-- A login: the new session, and away with those that have expired (logins are rare; the
-- table stays as small as the number of open sessions).
WITH expired AS (
    DELETE FROM waystone.web_sessions WHERE expires_at <= clock_timestamp()
)
INSERT INTO waystone.web_sessions (key, expires_at)
VALUES (%(key)s, clock_timestamp() + make_interval(secs => %(seconds)s::float8));

-- name: web_session_active
SELECT 1 AS active FROM waystone.web_sessions
WHERE key = %(key)s AND expires_at > clock_timestamp();

-- name: revoke_web_session
DELETE FROM waystone.web_sessions WHERE key = %(key)s;

-- name: mark_vault_key
-- The fingerprint of the key this database's vault is sealed with: the first one set.
INSERT INTO waystone.settings (name, value) VALUES ('vault_key', %(mark)s)
ON CONFLICT (name) DO NOTHING;

-- name: vault_key
SELECT value FROM waystone.settings WHERE name = 'vault_key';

-- name: store_in_vault
INSERT INTO waystone.vault (token, kind, ciphertext) VALUES (%(token)s, %(kind)s, %(sealed)s)
ON CONFLICT (token) DO NOTHING;

-- name: open_vault
SELECT ciphertext FROM waystone.vault WHERE token = %(token)s;

-- name: erase_from_vault
UPDATE waystone.vault SET ciphertext = NULL, erased_at = clock_timestamp()
WHERE token = ANY(%(tokens)s) AND ciphertext IS NOT NULL
RETURNING token;

-- name: step_times
-- Each node's steps, mean and p95 (ms), every run's, for the dashboard (see
-- waystone._runs.step_times).
WITH steps AS (
-- include: loop_steps
    WHERE c.metadata ->> 'source' = 'loop'
),
-- include: timed_steps

-- name: step_times_of_thread
-- Each node's steps, mean and p95 (ms), one thread's, by its keys only (a run's page).
WITH steps AS (
-- include: loop_steps
    WHERE c.thread_id = %(thread_id)s AND c.metadata ->> 'source' = 'loop'
),
-- include: timed_steps

-- name: send_packets
-- The Send packets every run's steps ran, newest first (see waystone._runs.step_times).
WITH steps AS (
-- include: loop_steps
    WHERE c.metadata ->> 'source' = 'loop'
),
-- include: packets_of_steps

-- name: send_packets_of_thread
-- The Send packets one thread's steps ran, newest first, by its keys only.
WITH steps AS (
-- include: loop_steps
    WHERE c.thread_id = %(thread_id)s AND c.metadata ->> 'source' = 'loop'
),
-- include: packets_of_steps

-- name: loop_steps
-- Part of step_times and send_packets: a step's checkpoint (filtered by the includer) with
-- its parent, the checkpoint it started from (its tasks saved their writes under it).
    SELECT r.agent AS graph, c.thread_id, c.checkpoint_ns, c.checkpoint_id,
           p.checkpoint_id AS parent_id,
           p.checkpoint -> 'channel_versions' ->> '__pregel_tasks' AS tasks_version,
           (p.checkpoint ->> 'ts')::timestamptz AS parent_ts,
           (c.checkpoint ->> 'ts')::timestamptz AS ended
    FROM public.checkpoints c
    JOIN waystone.runs r ON r.thread_id = c.thread_id
    JOIN public.checkpoints p
      ON p.thread_id = c.thread_id
     AND p.checkpoint_ns = c.checkpoint_ns
     AND p.checkpoint_id = c.parent_checkpoint_id

-- name: timed_steps
-- Part of step_times. A step took from its parent checkpoint (or the later claim that
-- resumed it: waiting is not work) to its own. A pulled task's path names its node; a Send
-- task's gives its position in the parent's __pregel_tasks value, named by the
-- send_* arrays ('(send)' when not). A node counts once per step however many of its
-- tasks ran; a subgraph's nodes are under their parent node (the namespace's first part).
timed AS MATERIALIZED (  -- once per step, not per write of its tasks
    SELECT s.graph, split_part(s.checkpoint_ns, ':', 1) AS parent, s.thread_id,
           s.checkpoint_ns, s.checkpoint_id, s.parent_id, s.tasks_version, s.ended,
           greatest(
               extract(epoch FROM s.ended - greatest(s.parent_ts, resumed.at))::float8 * 1000.0,
               0.0
           ) AS ms
    FROM steps s
    LEFT JOIN LATERAL (
        SELECT e.created_at AS at
        FROM waystone.run_events e
        WHERE e.thread_id = s.thread_id
          AND ((e.kind = 'transition' AND e.to_state = 'running') OR e.kind = 'lease-takeover')
          AND e.created_at > s.parent_ts
          AND e.created_at < s.ended
        ORDER BY e.created_at DESC
        LIMIT 1
    ) resumed ON true
),
ran AS (
    SELECT DISTINCT t.graph, t.parent, t.thread_id, t.checkpoint_ns, t.checkpoint_id, t.ended,
           t.ms,
           coalesce(
               CASE WHEN starts_with(w.task_path, '~__pregel_pull, ')
                    THEN split_part(w.task_path, ', ', 2) END,
               k.node,
               CASE WHEN starts_with(w.task_path, '~__pregel_push, ')
                     AND split_part(w.task_path, ', ', 2) ~ '^[0-9]{1,18}$'
                    THEN '(send)' END
           ) AS node
    FROM timed t
    JOIN public.checkpoint_writes w
      ON w.thread_id = t.thread_id
     AND w.checkpoint_ns = t.checkpoint_ns
     AND w.checkpoint_id = t.parent_id
    LEFT JOIN unnest(%(send_threads)s::text[], %(send_namespaces)s::text[],
                     %(send_versions)s::text[], %(send_positions)s::bigint[],
                     %(send_nodes)s::text[])
              AS k (thread_id, checkpoint_ns, version, position, node)
      ON starts_with(w.task_path, '~__pregel_push, ')
     AND k.thread_id = t.thread_id
     AND k.checkpoint_ns = t.checkpoint_ns
     AND k.version = t.tasks_version
     AND k.position = CASE WHEN split_part(w.task_path, ', ', 2) ~ '^[0-9]{1,18}$'
                           THEN split_part(w.task_path, ', ', 2)::bigint END
)
SELECT graph, nullif(parent, '') AS parent, node,
       count(*)::bigint AS n,
       avg(ms)::float8 AS mean_ms,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY ms)::float8 AS p95_ms
FROM ran
WHERE node <> '' AND NOT starts_with(node, '__')
GROUP BY graph, parent, node
ORDER BY graph, min(ended), parent, node;

-- name: packets_of_steps
-- Part of send_packets: the __pregel_tasks values the steps that ran Send tasks started
-- from, each once, the most recently used first, at most the limit given (a Send task
-- beyond them goes unnamed).
packets AS (
    SELECT s.thread_id, s.checkpoint_ns, s.tasks_version AS version, max(s.ended) AS used
    FROM steps s
    WHERE s.tasks_version IS NOT NULL
      AND EXISTS (SELECT 1 FROM public.checkpoint_writes w
                  WHERE w.thread_id = s.thread_id
                    AND w.checkpoint_ns = s.checkpoint_ns
                    AND w.checkpoint_id = s.parent_id
                    AND starts_with(w.task_path, '~__pregel_push, '))
    GROUP BY s.thread_id, s.checkpoint_ns, s.tasks_version
)
SELECT b.thread_id, b.checkpoint_ns, b.version, b.type, b.blob
FROM packets k
JOIN public.checkpoint_blobs b
  ON b.thread_id = k.thread_id
 AND b.checkpoint_ns = k.checkpoint_ns
 AND b.channel = '__pregel_tasks'
 AND b.version = k.version
WHERE b.type <> 'empty'
ORDER BY k.used DESC, b.thread_id, b.checkpoint_ns, b.version
LIMIT %(limit)s;

-- name: graph_position
-- What a run's latest checkpoint (or %(checkpoint_id)s) says about the nodes that run next
-- (see waystone._checkpointing.position): its format and source, the channel versions, the
-- versions each node has seen, the channels holding a value inline, and those its step
-- wrote.
SELECT c.checkpoint->'v' AS v,
       c.metadata->>'source' AS source,
       c.checkpoint->'channel_versions' AS versions,
       c.checkpoint->'versions_seen' AS seen,
       ARRAY(SELECT jsonb_object_keys(c.checkpoint->'channel_values')) AS inline,
       c.checkpoint->'updated_channels' AS updated
FROM public.checkpoints c
WHERE c.thread_id = %(thread_id)s AND c.checkpoint_ns = ''
  AND (%(checkpoint_id)s::text IS NULL OR c.checkpoint_id = %(checkpoint_id)s)
ORDER BY c.checkpoint_id DESC
LIMIT 1;

-- name: snapshot_transaction
-- The dashboard reads one consistent picture, and writes nothing.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY;

-- name: approved_by
-- Who approved the action a waiting run r waits on, while no worker has resumed it
-- (included in the dashboard's queries, never run alone): as run_as_shown's approved_by.
(SELECT s.actor FROM waystone.signals s
 WHERE r.state = 'waiting' AND r.waiting_for = 'approval'
   AND s.thread_id = r.thread_id AND s.name = 'approval' AND s.consumed_at IS NULL
   AND (r.wait_id IS NULL OR s.dedupe_key = r.wait_id)
 ORDER BY s.id
 LIMIT 1)

-- name: dashboard_counts
SELECT state, count(*)::bigint AS n
FROM waystone.runs
GROUP BY state;

-- name: dashboard_active_runs
SELECT r.thread_id, r.agent, r.state, r.reason, r.lease_owner,
       extract(epoch FROM now() - r.created_at)::float8 AS age_s,
-- include: approved_by
           AS approved_by
FROM waystone.runs r
WHERE r.state = ANY(%(states)s)
ORDER BY r.created_at, r.thread_id
LIMIT %(limit)s;

-- name: dashboard_retries
-- Retry events, named by the step that retried, plus every effect attempt beyond the first.
WITH kinds (kind, step) AS (
    SELECT u.kind, u.step FROM unnest(%(kinds)s::text[], %(steps)s::text[]) AS u (kind, step)
),
retries AS (
    SELECT k.step, count(*)::bigint AS retries
    FROM waystone.run_events e
    JOIN kinds k ON k.kind = e.kind
    GROUP BY k.step
    UNION ALL
    SELECT 'execute:' || tool AS step, sum(greatest(attempts - 1, 0))::bigint AS retries
    FROM waystone.effects
    GROUP BY tool
)
SELECT step, retries
FROM retries
WHERE retries > 0
ORDER BY retries DESC, step
LIMIT %(limit)s;

-- name: dashboard_pending_approvals
-- Runs waiting for a decision: an approved one waits for a worker, not for a person.
SELECT r.thread_id, r.agent,
       extract(epoch FROM now() - r.updated_at)::float8 AS waiting_s,
       r.evidence -> 'pending_approval' ->> 'tool' AS tool,
       r.evidence -> 'pending_approval' ->> 'reason' AS reason
FROM waystone.runs r
WHERE r.state = 'waiting' AND r.waiting_for = 'approval' AND
-- include: approved_by
      IS NULL
ORDER BY r.updated_at, r.thread_id
LIMIT %(limit)s;

-- name: dashboard_pending_signals
SELECT thread_id, agent, waiting_for, wake_at,
       extract(epoch FROM now() - updated_at)::float8 AS waiting_s
FROM waystone.runs
WHERE state = 'waiting' AND waiting_for IS DISTINCT FROM 'approval'
  AND waiting_for IS DISTINCT FROM 'resume'
ORDER BY updated_at, thread_id
LIMIT %(limit)s;

-- name: dashboard_pending_interrupts
-- Runs of a user's graph waiting on its interrupt() calls: what `waystone resume` answers
-- (their values are not shown when encryption seals the run's evidence).
SELECT thread_id, agent,
       extract(epoch FROM now() - updated_at)::float8 AS waiting_s,
       CASE WHEN jsonb_typeof(evidence -> 'interrupts') = 'array'
            THEN evidence -> 'interrupts' END AS interrupts
FROM waystone.runs
WHERE state = 'waiting' AND waiting_for = 'resume'
ORDER BY updated_at, thread_id
LIMIT %(limit)s;

-- name: dashboard_undelivered_signals
SELECT thread_id, name, extract(epoch FROM now() - created_at)::float8 AS age_s
FROM waystone.signals
WHERE consumed_at IS NULL
ORDER BY created_at, id
LIMIT %(limit)s;

-- name: follow_marks
-- What tells the server's streams that a run moved: each followed thread's run row and
-- newest checkpoint, and the newest key of the stream log of its run followed (if any).
SELECT t.thread_id, r.state, r.updated_at, r.lease_token,
       (SELECT max(c.checkpoint_id) FROM public.checkpoints c
         WHERE c.thread_id = t.thread_id AND c.checkpoint_ns = '') AS newest,
       (SELECT max(e.event_key) FROM waystone.stream_events e
         WHERE e.run_id = t.run_id) AS logged
  FROM unnest(%(threads)s::text[], %(logged)s::text[]) AS t(thread_id, run_id)
  LEFT JOIN waystone.runs r USING (thread_id);

-- name: root_checkpoints_after
-- A stream's next checkpoints of the graph itself, in order.
SELECT checkpoint_ns, checkpoint_id FROM public.checkpoints
WHERE thread_id = %(thread_id)s AND checkpoint_ns = '' AND checkpoint_id > %(after)s
ORDER BY checkpoint_id;

-- name: subgraph_checkpoints_from
-- A stream's checkpoints of subgraphs since its run's first, in order.
SELECT checkpoint_ns, checkpoint_id FROM public.checkpoints
WHERE thread_id = %(thread_id)s AND checkpoint_ns <> '' AND checkpoint_id >= %(first)s
ORDER BY checkpoint_id;

-- name: subgraph_checkpoints_between
-- As subgraph_checkpoints_from, up to (without) the graph's checkpoint %(before)s.
SELECT checkpoint_ns, checkpoint_id FROM public.checkpoints
WHERE thread_id = %(thread_id)s AND checkpoint_ns <> '' AND checkpoint_id >= %(first)s
  AND checkpoint_id < %(before)s
ORDER BY checkpoint_id;

-- name: create_thread
-- A thread made before its first run, owned by %(owner)s when given; none when the id is
-- taken, by a thread or a run.
WITH made AS (
    INSERT INTO waystone.threads (thread_id, metadata)
    SELECT %(thread_id)s, %(metadata)s
    WHERE NOT EXISTS (SELECT 1 FROM waystone.runs WHERE thread_id = %(thread_id)s)
    ON CONFLICT DO NOTHING
    RETURNING thread_id
), owned AS (
    INSERT INTO waystone.thread_owners (thread_id, owner)
    SELECT thread_id, %(owner)s FROM made WHERE %(owner)s::text IS NOT NULL
)
SELECT thread_id FROM made;

-- name: get_thread
-- A thread: made before its runs (a threads row), started by a run alone (a runs row), or
-- both; with its current run's agent and state when it has one, and its owner. None once
-- deleted.
SELECT thread_id, coalesce(t.metadata, '{}'::jsonb) AS metadata,
       coalesce(t.created_at, r.created_at) AS created_at,
       greatest(t.updated_at, r.updated_at) AS updated_at, r.agent, r.state, o.owner
FROM waystone.threads t FULL JOIN waystone.runs r USING (thread_id)
LEFT JOIN waystone.thread_owners o USING (thread_id)
WHERE thread_id = %(thread_id)s
  AND NOT EXISTS (SELECT 1 FROM waystone.deleted_threads d WHERE d.thread_id = %(thread_id)s);

-- name: list_threads
-- Threads (of %(owner)s only, when given), the latest changed first (their metadata is
-- filtered by the caller: it may be sealed); none deleted.
SELECT thread_id, coalesce(t.metadata, '{}'::jsonb) AS metadata,
       coalesce(t.created_at, r.created_at) AS created_at,
       greatest(t.updated_at, r.updated_at) AS updated_at, r.agent, r.state, o.owner
FROM waystone.threads t FULL JOIN waystone.runs r USING (thread_id)
LEFT JOIN waystone.thread_owners o USING (thread_id)
WHERE (%(owner)s::text IS NULL OR o.owner = %(owner)s)
  AND NOT EXISTS (SELECT 1 FROM waystone.deleted_threads d
                  WHERE d.thread_id = coalesce(t.thread_id, r.thread_id))
ORDER BY greatest(t.updated_at, r.updated_at) DESC, thread_id
LIMIT %(limit)s;

-- name: set_thread_metadata
-- A thread's metadata (merged by the caller: it may be sealed); a thread started by a run
-- alone gets a threads row for it.
INSERT INTO waystone.threads AS t (thread_id, metadata, created_at)
SELECT %(thread_id)s, %(metadata)s, coalesce(r.created_at, clock_timestamp())
FROM (SELECT 1) one LEFT JOIN waystone.runs r ON r.thread_id = %(thread_id)s
ON CONFLICT (thread_id) DO UPDATE
SET metadata = excluded.metadata, updated_at = clock_timestamp();

-- name: delete_thread
-- A thread gone from the API's view, its ended run marked pruned (no run begins on it
-- again; the caller erases its checkpoints); its runs, events and effects are kept:
-- history is evidence. None while its run has not ended, or when it was gone already.
WITH pruned AS (
    UPDATE waystone.runs SET pruned_at = coalesce(pruned_at, clock_timestamp())
    WHERE thread_id = %(thread_id)s AND state IN ('done', 'failed')
    RETURNING thread_id
)
INSERT INTO waystone.deleted_threads (thread_id, actor)
SELECT %(thread_id)s, %(actor)s
WHERE EXISTS (SELECT 1 FROM pruned)
   OR NOT EXISTS (SELECT 1 FROM waystone.runs WHERE thread_id = %(thread_id)s)
ON CONFLICT DO NOTHING
RETURNING thread_id;

-- name: store_run_options
-- What an API run was created with besides its input, in the transaction creating it.
INSERT INTO waystone.run_options (run_id, thread_id, metadata, options)
VALUES (%(run_id)s, %(thread_id)s, %(metadata)s, %(options)s);

-- name: run_options
SELECT metadata, options FROM waystone.run_options WHERE run_id = %(run_id)s;

-- name: thread_run_metadata
SELECT run_id, metadata FROM waystone.run_options WHERE thread_id = %(thread_id)s;

-- name: lock_thread_run
-- A thread's current run, locked (a worker's save waits, and its run cannot end, until
-- this transaction ends), with its number and the number of its pending runs.
SELECT r.thread_id, r.agent, r.state, r.waiting_for, r.lease_token, r.pruned_at,
       1 + (SELECT count(*) FROM waystone.thread_runs t WHERE t.thread_id = r.thread_id)
           AS run_number,
       (SELECT count(*) FROM waystone.pending_runs p WHERE p.thread_id = r.thread_id)
           AS pending
FROM waystone.runs r WHERE r.thread_id = %(thread_id)s FOR UPDATE;

-- name: insert_pending_run
INSERT INTO waystone.pending_runs (thread_id, number, agent, goal, input, evidence, actor)
VALUES (%(thread_id)s, %(number)s, %(agent)s, %(goal)s, %(input)s, %(evidence)s, %(actor)s);

-- name: begin_pending
SELECT waystone.begin_pending(%(thread_id)s) AS begun;

-- name: pending_runs
SELECT thread_id, number, agent, created_at
FROM waystone.pending_runs WHERE thread_id = %(thread_id)s ORDER BY number;

-- name: copy_checkpoint_as_latest
-- The thread's state at checkpoint %(at)s again, as its newest checkpoint (a rollback:
-- the next run starts from there), marked waystone_restored; its blobs are the same
-- versions, already stored.
INSERT INTO public.checkpoints
    (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata)
SELECT thread_id, checkpoint_ns, %(new_id)s, checkpoint_id, type,
       jsonb_set(checkpoint, '{id}', to_jsonb(%(new_id)s::text)),
       metadata || jsonb_build_object('waystone_restored', checkpoint_id)
FROM public.checkpoints
WHERE thread_id = %(thread_id)s AND checkpoint_ns = '' AND checkpoint_id = %(at)s;

-- name: insert_empty_checkpoint
INSERT INTO public.checkpoints
    (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata)
VALUES (%(thread_id)s, '', %(new_id)s, NULL, NULL, %(checkpoint)s, %(metadata)s);

-- name: newest_checkpoint_id
SELECT max(checkpoint_id) AS newest FROM public.checkpoints
WHERE thread_id = %(thread_id)s AND checkpoint_ns = '';

-- The stream log (waystone._streams): a logged run's live events.

-- name: stream_log_mark
-- The run is logged from now on: its worker appends its live events.
INSERT INTO waystone.stream_logs (thread_id, number, run_id)
VALUES (%(thread_id)s, %(number)s, %(run_id)s)
ON CONFLICT DO NOTHING;

-- name: stream_log_append
-- A worker's batch of live events, written only while its lease is the run's (FOR SHARE:
-- a takeover waits for this insert, and no row of an older lease lands after it). n: the
-- rows written (0: the lease moved on).
WITH written AS (
    INSERT INTO waystone.stream_events (run_id, event_key, attempt, event, data)
    SELECT %(run_id)s, x.event_key, %(attempt)s, x.event, x.data
    FROM unnest(%(keys)s::text[], %(events)s::text[], %(data)s::jsonb[])
        AS x(event_key, event, data)
    WHERE EXISTS (SELECT 1 FROM waystone.runs r
                  WHERE r.thread_id = %(thread_id)s AND r.lease_token = %(attempt)s
                    AND r.state = 'running'
                  FOR SHARE)
    ON CONFLICT DO NOTHING
    RETURNING 1
)
SELECT count(*) AS n FROM written;

-- name: stream_log_begin
-- Where a drive of a logged run begins: the thread's newest checkpoint (NULL: none), and
-- unless it resumes from a wait, the live events earlier attempts made of the step after
-- it (a step they abandoned); one row without an event when there are none.
WITH newest AS (
    SELECT max(checkpoint_id) AS checkpoint_id FROM public.checkpoints
    WHERE thread_id = %(thread_id)s AND checkpoint_ns = ''
)
SELECT n.checkpoint_id, e.attempt, e.event, e.data
FROM newest n
LEFT JOIN LATERAL (
    SELECT attempt, event, data FROM waystone.stream_events
    WHERE NOT %(resumed)s AND run_id = %(run_id)s
      AND event_key > coalesce(n.checkpoint_id, %(none)s) || %(low)s
      AND event_key < coalesce(n.checkpoint_id, %(none)s) || %(high)s
      AND attempt < %(attempt)s
    ORDER BY event_key
) e ON true;

-- name: stream_log_after
-- A stream's next live events, with the run's current lease token (one row, no event,
-- when there are none).
SELECT r.lease_token, e.event_key, e.attempt, e.event, e.data
FROM waystone.runs r
LEFT JOIN LATERAL (
    SELECT event_key, attempt, event, data FROM waystone.stream_events
    WHERE run_id = %(run_id)s AND event_key > %(after)s
    ORDER BY event_key
) e ON true
WHERE r.thread_id = %(thread_id)s;

-- name: stream_log_sweep
-- The logs of runs that ended longer ago than the retention, with their events.
WITH ended AS (
    SELECT l.thread_id, l.number
    FROM waystone.stream_logs l
    JOIN waystone.runs r ON r.thread_id = l.thread_id
    LEFT JOIN waystone.thread_runs t ON t.thread_id = l.thread_id AND t.number = l.number
    WHERE coalesce(
              t.ended_at,
              CASE WHEN r.state IN ('done', 'failed', 'needs-human')
                        AND l.number = 1 + (SELECT count(*) FROM waystone.thread_runs p
                                            WHERE p.thread_id = l.thread_id)
                   THEN r.updated_at END)
          < clock_timestamp() - make_interval(secs => %(retention_s)s)
    LIMIT %(limit)s
)
DELETE FROM waystone.stream_logs l USING ended
WHERE l.thread_id = ended.thread_id AND l.number = ended.number
RETURNING l.run_id;
-- Slice "store": the LangGraph store's tables are PostgresStore's own (its setup() makes
-- them in the public schema); these are Waystone's statements around them.

-- name: pgvector_available
SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') AS available;

-- name: lock_store_setup
-- One process at a time runs the store's setup() (its migrations' rows would collide).
SELECT pg_advisory_lock(hashtext('waystone.store_setup'));

-- name: unlock_store_setup
SELECT pg_advisory_unlock(hashtext('waystone.store_setup'));

-- name: store_exists
SELECT to_regclass('public.store') IS NOT NULL AS present;

-- name: sweep_store
-- The store's items whose TTL has passed (a worker's sweep).
DELETE FROM public.store WHERE expires_at IS NOT NULL AND expires_at < now();

-- name: thread_owner
SELECT owner FROM waystone.thread_owners WHERE thread_id = %(thread_id)s;
-- Assistants users make (slice "assistants"): each with its versions, one in force.

-- name: create_assistant
-- A new assistant with its first version, in one statement; nothing when the id is taken.
WITH made AS (
    INSERT INTO waystone.assistants (assistant_id, owner, version)
    VALUES (%(assistant_id)s, %(owner)s, 1)
    ON CONFLICT (assistant_id) DO NOTHING
    RETURNING assistant_id, created_at
)
INSERT INTO waystone.assistant_versions
    (assistant_id, version, graph_id, name, description, config, context, metadata, created_at)
SELECT assistant_id, 1, %(graph_id)s, %(name)s, %(description)s, %(config)s, %(context)s,
       %(metadata)s, created_at
FROM made
RETURNING assistant_id;

-- name: get_assistant
-- An assistant as its version in force has it.
SELECT a.assistant_id, a.owner, a.version, a.created_at, a.updated_at, v.graph_id, v.name,
       v.description, v.config, v.context, v.metadata
FROM waystone.assistants a
JOIN waystone.assistant_versions v ON v.assistant_id = a.assistant_id AND v.version = a.version
WHERE a.assistant_id = %(assistant_id)s;

-- name: lock_assistant
-- The assistant's row, locked until the transaction ends (one new version at a time).
SELECT assistant_id, owner FROM waystone.assistants
WHERE assistant_id = %(assistant_id)s
FOR UPDATE;

-- name: add_assistant_version
-- A new version of the assistant (numbered after its newest), made the one in force; run
-- with the assistant locked, in a statement of its own (so it sees the newest committed).
WITH added AS (
    INSERT INTO waystone.assistant_versions
        (assistant_id, version, graph_id, name, description, config, context, metadata)
    SELECT %(assistant_id)s, max(version) + 1, %(graph_id)s, %(name)s, %(description)s,
           %(config)s, %(context)s, %(metadata)s
    FROM waystone.assistant_versions WHERE assistant_id = %(assistant_id)s
    RETURNING assistant_id, version, created_at
)
UPDATE waystone.assistants a
SET version = added.version, updated_at = added.created_at
FROM added
WHERE a.assistant_id = added.assistant_id
RETURNING a.assistant_id;

-- name: set_assistant_version
-- The assistant's version %(version)s put in force; nothing when it has no such version.
UPDATE waystone.assistants a
SET version = %(version)s, updated_at = clock_timestamp()
WHERE a.assistant_id = %(assistant_id)s
  AND EXISTS (SELECT 1 FROM waystone.assistant_versions v
              WHERE v.assistant_id = a.assistant_id AND v.version = %(version)s)
RETURNING a.assistant_id;

-- name: delete_assistant
-- The assistant and its versions; nothing when there is none.
DELETE FROM waystone.assistants WHERE assistant_id = %(assistant_id)s RETURNING assistant_id;

-- name: list_assistants
-- The assistants %(owner)s sees (every one for the operator, NULL), the newest first.
SELECT a.assistant_id, a.owner, a.version, a.created_at, a.updated_at, v.graph_id, v.name,
       v.description, v.config, v.context, v.metadata
FROM waystone.assistants a
JOIN waystone.assistant_versions v ON v.assistant_id = a.assistant_id AND v.version = a.version
WHERE %(owner)s::text IS NULL OR a.owner = %(owner)s
ORDER BY a.created_at DESC
LIMIT %(limit)s;

-- name: assistant_versions
-- Every version of the assistant, the newest first.
SELECT v.assistant_id, a.owner, v.version, v.created_at, v.created_at AS updated_at, v.graph_id,
       v.name, v.description, v.config, v.context, v.metadata
FROM waystone.assistant_versions v
JOIN waystone.assistants a ON a.assistant_id = v.assistant_id
WHERE v.assistant_id = %(assistant_id)s
ORDER BY v.version DESC;
-- Run options (issue 25's "options" slice) ---------------------------------------------

-- name: has_graph_checkpoint
-- Whether the thread has checkpoint %(at)s of its graph (not of a subgraph): where a run
-- may begin.
SELECT 1 AS found FROM public.checkpoints
WHERE thread_id = %(thread_id)s AND checkpoint_ns = '' AND checkpoint_id = %(at)s
LIMIT 1;
