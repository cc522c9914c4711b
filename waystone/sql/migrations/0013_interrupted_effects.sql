-- Version 13.
-- An effect whose call raised LangGraph's interrupt() (or another of its control-flow
-- exceptions) is 'interrupted': the call did not finish, and the node that made it runs
-- again from its start on resume, so the re-made call (same key) goes on, never to
-- needs-human. An older process reads the status as an open intent (needs-human or a
-- lookup): never a second call it cannot account for.
ALTER TABLE waystone.effects DROP CONSTRAINT IF EXISTS effects_status_check;
ALTER TABLE waystone.effects ADD CONSTRAINT effects_status_check CHECK (status IN
    ('intent', 'applied', 'confirmed', 'failed', 'unknown', 'interrupted'));
