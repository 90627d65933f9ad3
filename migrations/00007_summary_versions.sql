-- Writes that cost what they must (issue 13): the Markdown files leave
-- the path of the acknowledgement, and a workspace summary is rendered
-- from the top of its ranking, not from every entry.
--
--   summary_versions   the versions of each workspace summary that
--                      summary_history/ keeps: one when the summary's
--                      text changes, not on every write; written in the
--                      fold's transaction, so the files are a projection
--                      of rows and a crash before they are written loses
--                      nothing.
--   projection_queue   the groups of files (the stable layer, a
--                      workspace, a day) that a committed fold changed
--                      and that are not written yet; gen counts the folds
--                      that queued the group, so a write removes only
--                      what it rendered. Open writes what is left.
--   files_intent       the hash each file is about to get, recorded
--                      before it is written: a file found with that hash
--                      after a crash is dshmem's own output, not a hand
--                      edit.
--   entry_counts       active and conflict entries per scope, kept by
--                      triggers, for the summary's "N more" line.
--   entries_summary    the summary's ranking as an index, so its top is
--                      read without sorting every entry.
--
-- Which history versions exist changes meaning, so every derived row goes
-- and the projector folds every stream again from seq 1.

-- +goose Up
DELETE FROM cursors;
DELETE FROM sessions;
INSERT INTO episodes_fts(episodes_fts) VALUES ('delete-all');
DELETE FROM episodes;
DELETE FROM events;
DELETE FROM entries_fts;
DELETE FROM entry_versions;
DELETE FROM entries;
DELETE FROM files;
DELETE FROM file_texts;
DELETE FROM shown;
DELETE FROM scopes;

CREATE TABLE summary_versions (
    stream  TEXT    NOT NULL,
    seq     INTEGER NOT NULL,  -- the memory event the version is the summary as of
    time    TEXT    NOT NULL,  -- that event's time
    sha256  TEXT    NOT NULL,
    content TEXT    NOT NULL,
    PRIMARY KEY (stream, seq)
) STRICT, WITHOUT ROWID;

CREATE TABLE projection_queue (
    key TEXT    NOT NULL PRIMARY KEY,  -- global | scope/<stream> | day/<YYYY-MM-DD>
    gen INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE files_intent (
    path   TEXT NOT NULL PRIMARY KEY,
    sha256 TEXT NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE entry_counts (
    scope TEXT    NOT NULL PRIMARY KEY,
    shown INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- +goose StatementBegin
CREATE TRIGGER entries_count_insert AFTER INSERT ON entries
WHEN NEW.status IN ('active', 'conflict') BEGIN
    INSERT INTO entry_counts (scope, shown) VALUES (NEW.scope, 1)
        ON CONFLICT (scope) DO UPDATE SET shown = shown + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER entries_count_delete AFTER DELETE ON entries
WHEN OLD.status IN ('active', 'conflict') BEGIN
    UPDATE entry_counts SET shown = shown - 1 WHERE scope = OLD.scope;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER entries_count_update AFTER UPDATE OF status, scope ON entries BEGIN
    UPDATE entry_counts SET shown = shown - 1
        WHERE scope = OLD.scope AND OLD.status IN ('active', 'conflict');
    INSERT INTO entry_counts (scope, shown) SELECT NEW.scope, 1
        WHERE NEW.status IN ('active', 'conflict')
        ON CONFLICT (scope) DO UPDATE SET shown = shown + 1;
END;
-- +goose StatementEnd

-- The expressions are those of projector.summaryOrder, character for
-- character: SQLite uses an index on expressions only for the same ones.
CREATE INDEX entries_summary ON entries (scope,
    (CASE status WHEN 'conflict' THEN 1 ELSE 0 END),
    importance DESC,
    (CASE type WHEN 'preference' THEN 0 WHEN 'rule' THEN 1 WHEN 'decision' THEN 2
        WHEN 'architecture' THEN 3 WHEN 'procedure' THEN 4 WHEN 'fix' THEN 5
        WHEN 'fact' THEN 6 WHEN '' THEN 8 ELSE 7 END),
    type, id) WHERE status IN ('active', 'conflict');

CREATE INDEX entries_scope_updated ON entries (scope, updated_seq, updated_at);

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
DELETE FROM file_texts;
DELETE FROM shown;
DELETE FROM scopes;
DROP INDEX entries_scope_updated;
DROP INDEX entries_summary;
DROP TRIGGER entries_count_update;
DROP TRIGGER entries_count_delete;
DROP TRIGGER entries_count_insert;
DROP TABLE entry_counts;
DROP TABLE files_intent;
DROP TABLE projection_queue;
DROP TABLE summary_versions;
