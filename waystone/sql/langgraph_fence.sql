-- Fencing on LangGraph's own tables (created by its setup(), so applied after it).
-- Idempotent: run on every migration.
DROP TRIGGER IF EXISTS waystone_fence ON public.checkpoints;
CREATE TRIGGER waystone_fence BEFORE INSERT OR UPDATE ON public.checkpoints
    FOR EACH ROW EXECUTE FUNCTION waystone.check_fence('strict');
DROP TRIGGER IF EXISTS waystone_fence ON public.checkpoint_writes;
CREATE TRIGGER waystone_fence BEFORE INSERT OR UPDATE ON public.checkpoint_writes
    FOR EACH ROW EXECUTE FUNCTION waystone.check_fence('strict');
DROP TRIGGER IF EXISTS waystone_fence ON public.checkpoint_blobs;
CREATE TRIGGER waystone_fence BEFORE INSERT OR UPDATE ON public.checkpoint_blobs
    FOR EACH ROW EXECUTE FUNCTION waystone.check_fence('strict');
