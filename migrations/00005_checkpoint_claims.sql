-- The ranges checkpoints have claimed: every memory/ops event records the
-- seq range of the session it distilled (data.session, data.from,
-- data.to), and pending work is what lies beyond the last claim
-- (observer/pending.go). A partial index finds those events without a
-- scan of the whole events table; it holds one row per memory/ops event,
-- so it costs the fold of every other event nothing but the WHERE test.
--
-- No derived row changes meaning here, so nothing is refolded. (The
-- projection of memory/ops into entries arrives with this migration,
-- but no earlier build wrote memory/ops events; an index that folded
-- hand-made ones as plain events is rebuilt by `dshmem replay`.)

-- +goose Up
CREATE INDEX events_memory_ops ON events (stream, seq) WHERE type = 'memory/ops';

-- +goose Down
DROP INDEX events_memory_ops;
