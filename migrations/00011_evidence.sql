-- Memory that learns from evidence (issue 16): the aliases a user's own
-- words taught (op "alias"), and learned procedures with their stage
-- history (op "procedure"). Both are folded from memory/ops events only
-- (projector/evidence.go); a confidence op changes entries and
-- entry_versions, which exist already.
--
-- Nothing is refolded: these op kinds are new, and no earlier build wrote
-- one (distill.Validate refused any op name outside add, revise,
-- supersede, conflict and forget, and hand edits write only those), so
-- the tables are empty behind every cursor, as a fold from seq 1 would
-- leave them.

-- +goose Up
-- One row per (scope, alias, expansion), the first op that taught it.
-- alias_key and expansion_key are the case-folded forms recall matches.
CREATE TABLE aliases (
    scope         TEXT    NOT NULL,
    alias_key     TEXT    NOT NULL,
    expansion_key TEXT    NOT NULL,
    alias         TEXT    NOT NULL,
    expansion     TEXT    NOT NULL,
    quote         TEXT    NOT NULL DEFAULT '',   -- the user's words it was learned from
    event_id      TEXT    NOT NULL,              -- the memory/ops event
    evidence      TEXT    NOT NULL DEFAULT '[]', -- JSON array of the messages' event ids
    seq           INTEGER NOT NULL,
    time          TEXT    NOT NULL,
    PRIMARY KEY (scope, alias_key, expansion_key)
) STRICT, WITHOUT ROWID;

-- A procedure's current state (the last op's snapshot, payload.Procedure
-- as JSON in state) and one row per stage change.
CREATE TABLE procedures (
    id          TEXT    NOT NULL PRIMARY KEY,
    scope       TEXT    NOT NULL,
    stage       TEXT    NOT NULL CHECK (stage IN ('P0', 'P1', 'P2', 'P3', 'P4')),
    trigger     TEXT    NOT NULL,
    state       TEXT    NOT NULL,
    version     INTEGER NOT NULL,
    created_seq INTEGER NOT NULL,
    updated_seq INTEGER NOT NULL,
    updated_at  TEXT    NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX procedures_scope ON procedures (scope, stage);

-- The evidence pass asks whether an entry was shown in another session
-- before (reuse, sqlstore.Store.ShownElsewhereBefore): the memory/shown
-- events of a stream below a seq, without reading its other events.
CREATE INDEX events_memory_shown ON events (stream, seq) WHERE type = 'memory/shown';

CREATE TABLE procedure_versions (
    procedure_id TEXT    NOT NULL,
    version      INTEGER NOT NULL,
    stream       TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    event_id     TEXT    NOT NULL,
    time         TEXT    NOT NULL,
    stage        TEXT    NOT NULL,
    reason       TEXT    NOT NULL DEFAULT '',
    evidence     TEXT    NOT NULL DEFAULT '[]',  -- JSON array of event ids
    state        TEXT    NOT NULL,
    PRIMARY KEY (procedure_id, version)
) STRICT, WITHOUT ROWID;

-- +goose Down
DROP INDEX events_memory_shown;
DROP TABLE procedure_versions;
DROP INDEX procedures_scope;
DROP TABLE procedures;
DROP TABLE aliases;
