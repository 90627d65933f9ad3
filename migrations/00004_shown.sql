-- Entries shown to each session (memory/shown events), for recall's
-- already-shown penalty: repeated recalls in one session rotate instead
-- of repeating.

-- +goose Up
-- Keyed by stream too, like sessions, so folds of different streams
-- stay independent (they commute; replay relies on it).
CREATE TABLE shown (
    session   TEXT    NOT NULL,
    stream    TEXT    NOT NULL,
    entry_id  TEXT    NOT NULL,
    count     INTEGER NOT NULL CHECK (count > 0),  -- memory/shown events listing the entry
    last_seq  INTEGER NOT NULL,                    -- seq of the latest of them
    last_time TEXT    NOT NULL,                    -- and its event time
    PRIMARY KEY (session, stream, entry_id)
) STRICT, WITHOUT ROWID;

-- The events are already in the index: fold the ones folded before this
-- table existed (the projector's fold gives the same rows: one count per
-- event listing the id, repeats within an event counted once).
INSERT INTO shown (session, stream, entry_id, count, last_seq, last_time)
-- (time is a bare column beside the one max(): SQLite takes it from the
-- row holding max(seq), as the fold keeps the latest event's time.)
SELECT session, stream, entry_id, count(*), max(seq), time
FROM (SELECT DISTINCT coalesce(nullif(e.data ->> 'session', ''), e.session) AS session,
             e.stream, j.value AS entry_id, e.seq, e.time
      FROM events e, json_each(e.data -> 'entries') j
      WHERE e.type = 'memory/shown' AND json_valid(e.data) AND json_type(e.data -> 'entries') = 'array'
        AND j.type = 'text' AND j.value <> '')
WHERE session <> ''
GROUP BY session, stream, entry_id;

-- +goose Down
DROP TABLE shown;
