-- What the Markdown projector needs beyond the entries: each workspace's
-- working directory (scope.json and the summary header), the text of
-- each file sync reads back (global.md, knowledge/*.md) as dshmem last
-- wrote it, and an index that finds a day's compaction and session
-- summaries without scanning every event.

-- +goose Up
-- A projection appears: every derived row goes, and so do the cursors,
-- so the projector folds every stream again from seq 1 and fills scopes.
DELETE FROM cursors;
DELETE FROM sessions;
INSERT INTO episodes_fts(episodes_fts) VALUES ('delete-all');
DELETE FROM episodes;
DELETE FROM events;
DELETE FROM entries_fts;
DELETE FROM entry_versions;
DELETE FROM entries;
DELETE FROM files;
DELETE FROM shown;

-- One row per workspace stream: the cwd of its first event that has one
-- (every cwd of a ws- stream normalizes to the same directory; the first
-- one seen is kept as written), with that event's seq and time. Written
-- once, never updated, so a summary rendered at any seq shows the same
-- header live and in replay.
CREATE TABLE scopes (
    stream TEXT    NOT NULL PRIMARY KEY,
    cwd    TEXT    NOT NULL,
    seq    INTEGER NOT NULL,
    time   TEXT    NOT NULL
) STRICT, WITHOUT ROWID;

-- The bytes dshmem last wrote to each file that sync reads back, so a
-- hand edit is compared with what the person saw, even when the index
-- has moved on since (a file holding an uncaptured edit is not rewritten).
CREATE TABLE file_texts (
    path    TEXT NOT NULL PRIMARY KEY,  -- as in files.path
    content TEXT NOT NULL
) STRICT, WITHOUT ROWID;

-- sessions/YYYY-MM-DD.md is fed by the compaction summaries and session
-- ends of that day (the date in the event's own offset: the first ten
-- characters of its RFC 3339 time).
CREATE INDEX events_day_blocks ON events (substr(time, 1, 10))
    WHERE type IN ('compaction/summary', 'session/end');

-- +goose Down
DELETE FROM cursors;
DELETE FROM sessions;
INSERT INTO episodes_fts(episodes_fts) VALUES ('delete-all');
DELETE FROM episodes;
DELETE FROM events;
DELETE FROM entries_fts;
DELETE FROM entry_versions;
DELETE FROM entries;
DELETE FROM files;
DELETE FROM shown;
DROP INDEX events_day_blocks;
DROP TABLE file_texts;
DROP TABLE scopes;
