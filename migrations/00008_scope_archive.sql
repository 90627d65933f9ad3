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

-- The scope list (observer.Engine.Scopes) counts each scope's entries
-- by status; entry_status_counts keeps those counts by trigger, like
-- entry_counts, so the list reads 4 rows a scope instead of scanning
-- every entry.

-- +goose Up
CREATE TABLE entry_status_counts (
    scope  TEXT    NOT NULL,
    status TEXT    NOT NULL,
    n      INTEGER NOT NULL,
    PRIMARY KEY (scope, status)
) STRICT, WITHOUT ROWID;

INSERT INTO entry_status_counts (scope, status, n) SELECT scope, status, count(*) FROM entries GROUP BY scope, status;

-- +goose StatementBegin
CREATE TRIGGER entries_status_insert AFTER INSERT ON entries BEGIN
    INSERT INTO entry_status_counts (scope, status, n) VALUES (NEW.scope, NEW.status, 1)
        ON CONFLICT (scope, status) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER entries_status_delete AFTER DELETE ON entries BEGIN
    UPDATE entry_status_counts SET n = n - 1 WHERE scope = OLD.scope AND status = OLD.status;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER entries_status_update AFTER UPDATE OF status, scope ON entries
WHEN OLD.status IS NOT NEW.status OR OLD.scope IS NOT NEW.scope BEGIN
    UPDATE entry_status_counts SET n = n - 1 WHERE scope = OLD.scope AND status = OLD.status;
    INSERT INTO entry_status_counts (scope, status, n) VALUES (NEW.scope, NEW.status, 1)
        ON CONFLICT (scope, status) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd

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
DROP TRIGGER entries_status_update;
DROP TRIGGER entries_status_delete;
DROP TRIGGER entries_status_insert;
DROP TABLE entry_status_counts;
