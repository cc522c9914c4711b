-- Version 16.
-- A person who checked the provider can settle an open effect of a run nobody drives:
-- 'absent' records that the provider shows no such effect, so the re-run makes the call
-- again under its key (as a lookup that proves absence does). An older process reads the
-- status as an open intent (needs-human or a lookup): never a second call it cannot
-- account for.
ALTER TABLE waystone.effects DROP CONSTRAINT IF EXISTS effects_status_check;
ALTER TABLE waystone.effects ADD CONSTRAINT effects_status_check CHECK (status IN
    ('intent', 'applied', 'confirmed', 'failed', 'unknown', 'interrupted', 'absent'));
