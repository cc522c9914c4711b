-- Version 14.
-- The model's tool call an effect was made for (a ToolNode's call, a durable tool's), so
-- that a call a stopped run left without a result is matched to its own effect, never to
-- an identical call's. NULL for an effect made outside a tool call (an @effect in a node).
ALTER TABLE waystone.effects ADD COLUMN tool_call_id text;
CREATE INDEX effects_tool_call_idx ON waystone.effects (thread_id, tool_call_id)
    WHERE tool_call_id IS NOT NULL;
