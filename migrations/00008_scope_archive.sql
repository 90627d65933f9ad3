-- The recycle bin of scopes (issue 14): a workspace scope archived by a
-- scope/archive event in its own stream, until a scope/restore there.
-- An archived scope keeps every row and every event; recall, search,
-- the session-start context and packets leave it out, and its
-- projections live under archived/ws-<id>/ instead of scopes/ws-<id>/.
--
-- The events are already in the index, so nothing is refolded: the
-- streams whose last scope/archive or scope/restore event is an archive
-- are archived, and their files are queued so that the next open moves
-- them (projector.RepairFiles writes the queue).

-- +goose Up
CREATE TABLE archived_scopes (
    stream TEXT    NOT NULL PRIMARY KEY,
    seq    INTEGER NOT NULL,  -- the scope/archive event
    time   TEXT    NOT NULL   -- and its time
) STRICT, WITHOUT ROWID;

INSERT INTO archived_scopes (stream, seq, time)
SELECT e.stream, e.seq, e.time FROM events e
WHERE e.type = 'scope/archive' AND e.stream LIKE 'ws-%'
  AND e.seq = (SELECT max(x.seq) FROM events x WHERE x.stream = e.stream AND x.type IN ('scope/archive', 'scope/restore'));

INSERT INTO projection_queue (key, gen) SELECT 'scope/' || stream, 1 FROM archived_scopes WHERE true
    ON CONFLICT (key) DO UPDATE SET gen = gen + 1;

-- +goose Down
-- The files of archived scopes go back under scopes/ on the next open.
INSERT INTO projection_queue (key, gen) SELECT 'scope/' || stream, 1 FROM archived_scopes WHERE true
    ON CONFLICT (key) DO UPDATE SET gen = gen + 1;
DELETE FROM files WHERE path LIKE 'archived/%';
DROP TABLE archived_scopes;
