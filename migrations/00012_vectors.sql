-- Sentence vectors of English entries and episodes (issue 15, item 3):
-- the optional encoder's projection of the index's own text, filled in
-- the background after the text is acknowledged (sqlstore/vectors).
--
--   vectors        one row per encoded text: an entry (keyed by its id,
--                  with the entry version whose text was encoded) or an
--                  episode (keyed by stream and seq). code is the unit
--                  vector quantised to int8 (Dim bytes, value = code ·
--                  scale); a row with NULL code marks an entry whose text
--                  is not English (it gets no vector, and is not looked
--                  at again until its version changes). model and
--                  model_version name the encoder: a row of another model
--                  is never scanned. id is local, like events.n.
--   vector_state   one row: epoch, a random name of this index file (a
--                  rebuilt index has another, so a process's cache of the
--                  vectors knows to reload); entry_gen and episode_gen,
--                  counted up by every delete from vectors of that kind
--                  (ditto, for that kind alone); episodes_upto, the
--                  episodes.n below which every episode was looked at.
--
-- The rows are derived from rows of this index (not folded from events),
-- so no cursor is reset: an index without them fills them in the
-- background. Dump leaves both tables out; DumpVectors covers vectors.

-- +goose Up
CREATE TABLE vectors (
    id            INTEGER PRIMARY KEY,
    kind          TEXT    NOT NULL CHECK (kind IN ('entry', 'episode')),
    stream        TEXT    NOT NULL,              -- an entry's scope, an episode's stream
    seq           INTEGER NOT NULL DEFAULT 0,    -- an episode's seq; 0 for an entry
    entry         TEXT    NOT NULL DEFAULT '',   -- an entry's id; '' for an episode
    version       INTEGER NOT NULL DEFAULT 0,    -- the entry version encoded
    model         TEXT    NOT NULL,
    model_version TEXT    NOT NULL,
    scale         REAL,
    code          BLOB,
    UNIQUE (kind, stream, seq, entry)
) STRICT;

CREATE INDEX vectors_entry ON vectors (entry) WHERE kind = 'entry';

CREATE TABLE vector_state (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    epoch         TEXT    NOT NULL,
    entry_gen     INTEGER NOT NULL DEFAULT 0,
    episode_gen   INTEGER NOT NULL DEFAULT 0,
    episodes_upto INTEGER NOT NULL DEFAULT 0
) STRICT;

INSERT INTO vector_state (id, epoch) VALUES (1, lower(hex(randomblob(8))));

-- +goose StatementBegin
CREATE TRIGGER vectors_deleted AFTER DELETE ON vectors
BEGIN
    UPDATE vector_state SET entry_gen = entry_gen + (old.kind = 'entry'),
        episode_gen = episode_gen + (old.kind = 'episode') WHERE id = 1;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER vectors_deleted;
DROP TABLE vector_state;
DROP INDEX vectors_entry;
DROP TABLE vectors;
