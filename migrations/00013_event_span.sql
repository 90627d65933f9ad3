-- The oldest event time (issue 13: open is cheap).
--
--   event_span   one row at most: the least events.time folded (the same
--                string order as min(time) over events, which it
--                replaces). "backup due" asks for it at every session
--                start while no backup is recorded, and `dshmem stats`
--                with it; min(time) read every event (1 s at 1M
--                events). A fold lowers it (a minimum, so folds of
--                different streams commute); a purge computes it again
--                from the events left. Filled here from the events
--                already folded.

-- +goose Up
CREATE TABLE event_span (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    first_time TEXT    NOT NULL
) STRICT;

INSERT INTO event_span (id, first_time)
SELECT 1, min(time) FROM events HAVING min(time) IS NOT NULL;

-- +goose Down
DROP TABLE event_span;
