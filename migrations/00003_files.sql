-- Projection files written after a fold: what was written and which
-- events it reflects, so that a later run can tell a hand edit (hash
-- differs) from its own output. Nothing to backfill: the table starts
-- empty and the Markdown projector records each file as it writes it.

-- +goose Up
CREATE TABLE files (
    path      TEXT    NOT NULL PRIMARY KEY,  -- relative to the memory root, '/'-separated
    sha256    TEXT    NOT NULL,              -- hex of the bytes written
    bytes     INTEGER NOT NULL,
    stream    TEXT    NOT NULL DEFAULT '',   -- the stream that last changed it
    seq       INTEGER NOT NULL DEFAULT 0,    -- and its seq
    positions TEXT    NOT NULL DEFAULT '{}', -- JSON {stream: seq} for files fed by several streams
    time      TEXT    NOT NULL DEFAULT ''    -- event time of that change
) STRICT, WITHOUT ROWID;

-- +goose Down
DROP TABLE files;
