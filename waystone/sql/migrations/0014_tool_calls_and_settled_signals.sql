-- Version 14.
-- The model's tool call an effect was made for (a ToolNode's call, a durable tool's), so
-- that a call a stopped run left without a result is matched to its own effect, never to
-- an identical call's. NULL for an effect made outside a tool call (an @effect in a node).
ALTER TABLE waystone.effects ADD COLUMN tool_call_id text;
CREATE INDEX effects_tool_call_idx ON waystone.effects (thread_id, tool_call_id)
    WHERE tool_call_id IS NOT NULL;

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

CREATE OR REPLACE FUNCTION waystone.record_transition() RETURNS trigger LANGUAGE plpgsql AS $$
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
