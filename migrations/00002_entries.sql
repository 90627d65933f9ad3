-- Memory entries (ARCHITECTURE §5), their version history and a full-text
-- index over them for recall.

-- +goose Up
-- A projection appears or disappears: every derived row goes, and so do
-- the cursors, so the projector folds every stream again from seq 1.
DELETE FROM cursors;
DELETE FROM sessions;
INSERT INTO episodes_fts(episodes_fts) VALUES ('delete-all');
DELETE FROM episodes;
DELETE FROM events;


-- n is local (rowid of entries_fts), like events.n; id is the entry's
-- identity, derived from the event that created it.
CREATE TABLE entries (
    n              INTEGER PRIMARY KEY,
    id             TEXT    NOT NULL UNIQUE,
    scope          TEXT    NOT NULL,          -- the stream the entry lives in
    type           TEXT    NOT NULL CHECK (type IN ('preference', 'decision', 'architecture', 'rule', 'fact', 'fix', 'procedure')),
    title          TEXT    NOT NULL,
    description    TEXT    NOT NULL DEFAULT '',
    terms          TEXT    NOT NULL DEFAULT '',
    content        TEXT    NOT NULL,
    tags           TEXT    NOT NULL DEFAULT '[]',   -- JSON array of strings
    importance     INTEGER NOT NULL DEFAULT 1 CHECK (importance BETWEEN 0 AND 3),
    confidence     REAL    NOT NULL DEFAULT 1,
    status         TEXT    NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'conflict', 'superseded', 'forgotten')),
    conflict_group TEXT    NOT NULL DEFAULT '',
    supersedes     TEXT    NOT NULL DEFAULT '',
    superseded_by  TEXT    NOT NULL DEFAULT '',
    provenance     TEXT    NOT NULL DEFAULT '{}',   -- JSON {"eventIds":[…],"reason":"…"}
    created_at     TEXT    NOT NULL,                -- event times, never the wall clock
    updated_at     TEXT    NOT NULL,
    version        INTEGER NOT NULL DEFAULT 1,
    created_seq    INTEGER NOT NULL,
    updated_seq    INTEGER NOT NULL
) STRICT;

CREATE INDEX entries_scope_status ON entries (scope, status);

-- One row per version of an entry: the state after the op, and the event
-- that made it.
CREATE TABLE entry_versions (
    entry_id    TEXT    NOT NULL,
    version     INTEGER NOT NULL,
    stream      TEXT    NOT NULL,
    seq         INTEGER NOT NULL,
    event_id    TEXT    NOT NULL,
    op          TEXT    NOT NULL,   -- add | forget (memory/ops adds revise, supersede, conflict)
    time        TEXT    NOT NULL,
    type        TEXT    NOT NULL,
    title       TEXT    NOT NULL,
    description TEXT    NOT NULL DEFAULT '',
    terms       TEXT    NOT NULL DEFAULT '',
    content     TEXT    NOT NULL,
    tags        TEXT    NOT NULL DEFAULT '[]',
    importance  INTEGER NOT NULL,
    confidence  REAL    NOT NULL,
    status      TEXT    NOT NULL,
    reason      TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (entry_id, version)
) STRICT, WITHOUT ROWID;

-- Entries are few (thousands), so this is an ordinary FTS5 table that
-- keeps its own copy: title and body for whole-word matches, bigrams
-- (tokenize.IndexText of title, body and tags) for Chinese.
CREATE VIRTUAL TABLE entries_fts USING fts5(
    title,
    body,
    bigrams,
    tokenize = 'unicode61 remove_diacritics 2'
);

-- +goose Down
-- A projection appears or disappears: every derived row goes, and so do
-- the cursors, so the projector folds every stream again from seq 1.
DELETE FROM cursors;
DELETE FROM sessions;
INSERT INTO episodes_fts(episodes_fts) VALUES ('delete-all');
DELETE FROM episodes;
DELETE FROM events;
DROP TABLE entries_fts;
DROP TABLE entry_versions;
DROP TABLE entries;
