-- Backups and rotation (issue 14, item 3).
--
--   day_rotation     the cut-off day of session rotation: day files of
--                    earlier days live in sessions/archive/ instead of
--                    sessions/. One row at most, the greatest
--                    data.before of the maintenance/rotate events folded
--                    (a maximum, so folds of different streams commute).
--                    No build before this one wrote a maintenance/rotate
--                    event with data, so the row is filled here from the
--                    events already folded, with the fold's own rule,
--                    instead of folding every stream again.
--   events_backups   finds the newest maintenance/backup event without
--                    reading every event ("backup due" is asked at every
--                    session start and by serve's schedule).

-- +goose Up
CREATE TABLE day_rotation (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    before TEXT    NOT NULL
) STRICT;

INSERT INTO day_rotation (id, before)
SELECT 1, max(data ->> 'before') FROM events
WHERE type = 'maintenance/rotate'
  AND (data ->> 'before') GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'
  AND date(data ->> 'before') = (data ->> 'before')   -- a real date, as projector.ValidDay
HAVING max(data ->> 'before') IS NOT NULL;

CREATE INDEX events_backups ON events (time) WHERE type = 'maintenance/backup';

-- +goose Down
DROP INDEX events_backups;
DROP TABLE day_rotation;
