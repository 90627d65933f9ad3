-- Events, episodic text, sessions and cursors: the projection of every
-- stream's log. Derived data; `dshmem replay` rebuilds it from the log.

-- +goose Up

-- One row per event, exactly as logged (text fields were redacted before
-- the log was written). n is a local row number that links the row to
-- episodes and episodes_fts; it depends on the order in which streams were
-- folded, so it is not part of the canonical content (projector.Dump
-- leaves it out). It is declared INTEGER PRIMARY KEY so that VACUUM never
-- renumbers it.
CREATE TABLE events (
    n       INTEGER PRIMARY KEY,
    stream  TEXT    NOT NULL,
    seq     INTEGER NOT NULL CHECK (seq > 0),
    id      TEXT    NOT NULL,
    type    TEXT    NOT NULL,
    time    TEXT    NOT NULL,
    session TEXT    NOT NULL DEFAULT '',
    data    TEXT,                 -- the event's data object as JSON; NULL when absent
    UNIQUE (stream, seq),
    UNIQUE (stream, id)
) STRICT;

-- Episodic records: the events whose text is searchable (user and
-- assistant messages, tool results, compaction summaries, task ends).
-- The text itself is not copied here: it stays in events.data and the
-- episode_texts view extracts it.
CREATE TABLE episodes (
    n        INTEGER PRIMARY KEY,            -- = events.n = episodes_fts.rowid
    injected INTEGER NOT NULL DEFAULT 0 CHECK (injected IN (0, 1))
) STRICT;

-- The full-text index of episodes, under rowid = events.n. Its one column
-- is fed the distinct terms of the text (tokenize.Terms joined by spaces:
-- CJK bigrams, word parts), already normalized and case-folded, so:
--   content = ''   contentless: it stores no copy of the text (that is in
--                  events.data); contentless_delete lets a scope purge
--                  delete its rows;
--   detail = none  only which rows hold a term: no positions, no counts.
--                  Queries are ORs/ANDs of one-token phrases
--                  (tokenize.MatchQuery), which need nothing more, and
--                  the index is about a third of detail=full;
--   ascii          splits at ASCII separators only, the spaces we put
--                  there; unicode61 would re-fold what is already
--                  folded, costing about a fifth more per insert.
--                  (Accents are kept on both sides: 'café' does not
--                  find 'cafe'.)
CREATE VIRTUAL TABLE episodes_fts USING fts5(
    bigrams,
    content = '',
    contentless_delete = 1,
    detail = none,
    tokenize = 'ascii'
);

-- Bulk-fold tuning, measured with BenchmarkFold (10k events per fold):
-- merge segments when 8 of a level pile up instead of 4 (about a quarter
-- less CPU per insert, a few more segments for a query to probe), and
-- buffer 8 MiB of pending terms instead of 1 MiB before writing a
-- segment (fewer, larger segments; about 5% faster and 2% smaller).
INSERT INTO episodes_fts (episodes_fts, rank) VALUES ('automerge', 8);
INSERT INTO episodes_fts (episodes_fts, rank) VALUES ('hashsize', 8388608);

-- Term statistics of episodes_fts (term, documents, occurrences); it does
-- not depend on rowids, so two indexes folded in different orders agree.
CREATE VIRTUAL TABLE episodes_terms USING fts5vocab(episodes_fts, row);

-- The text of each episode, as the projector extracted it for indexing
-- (projector.EpisodeText is the Go twin of the CASE below).
CREATE VIEW episode_texts AS
SELECT e.stream, e.seq, e.id AS event_id, e.type, e.session, e.time, ep.injected,
       CASE e.type
           WHEN 'task/end' THEN trim(coalesce(e.data ->> 'request', '') || char(10) ||
                                     coalesce(e.data ->> 'result', ''), char(10))
           ELSE coalesce(e.data ->> 'text', '')
       END AS text
FROM episodes ep
JOIN events e ON e.n = ep.n;

-- One row per session and stream: a session's events normally live in one
-- stream, but keying on both keeps folds of different streams independent
-- (they commute), which replay's determinism relies on.
CREATE TABLE sessions (
    session      TEXT    NOT NULL,
    stream       TEXT    NOT NULL,
    cwd          TEXT    NOT NULL DEFAULT '',  -- session/start cwd, else the first cwd seen
    origin       TEXT    NOT NULL DEFAULT '',  -- top | subagent
    parent       TEXT    NOT NULL DEFAULT '',
    agent_preset TEXT    NOT NULL DEFAULT '',
    started_at   TEXT    NOT NULL DEFAULT '',  -- time of session/start
    ended_at     TEXT    NOT NULL DEFAULT '',  -- time of session/end
    first_seq    INTEGER NOT NULL,
    last_seq     INTEGER NOT NULL,
    first_time   TEXT    NOT NULL,
    last_time    TEXT    NOT NULL,
    events       INTEGER NOT NULL DEFAULT 0,
    user_turns   INTEGER NOT NULL DEFAULT 0,   -- user/message events not injected by the host
    user_chars   INTEGER NOT NULL DEFAULT 0,   -- their text length in runes
    PRIMARY KEY (session, stream)
) STRICT, WITHOUT ROWID;

-- The last seq of each stream folded into this index. Written in the same
-- transaction as the rows of that fold.
CREATE TABLE cursors (
    stream TEXT    NOT NULL PRIMARY KEY,
    seq    INTEGER NOT NULL CHECK (seq >= 0)
) STRICT, WITHOUT ROWID;

-- +goose Down
DROP TABLE cursors;
DROP TABLE sessions;
DROP VIEW episode_texts;
DROP TABLE episodes_terms;
DROP TABLE episodes_fts;
DROP TABLE episodes;
DROP TABLE events;
