package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The scope lifecycle (issue 14): archive and restore are folded from
// the scope's own stream into archived_scopes; a purge deletes every row
// of a stream whose log is gone (PurgeStream) and compacts the file so
// that no deleted byte stays in it (Compact).

// ArchiveScope marks workspace stream archived by the scope/archive
// event at seq and time. Archiving an archived scope keeps the first
// archive's seq and time.
func (t *FoldTx) ArchiveScope(stream string, seq uint64, time string) error {
	if _, err := t.exec(`INSERT INTO archived_scopes (stream, seq, time) VALUES (?, ?, ?) ON CONFLICT (stream) DO NOTHING`,
		stream, int64(seq), time); err != nil {
		return fmt.Errorf("archive scope %s: %w", stream, err)
	}
	return nil
}

// RestoreScope takes workspace stream out of the recycle bin.
func (t *FoldTx) RestoreScope(stream string) error {
	if _, err := t.exec(`DELETE FROM archived_scopes WHERE stream = ?`, stream); err != nil {
		return fmt.Errorf("restore scope %s: %w", stream, err)
	}
	return nil
}

// ScopeArchived reports whether stream is archived.
func (r Reader) ScopeArchived(ctx context.Context, stream string) (bool, error) {
	var n int
	if err := r.q.QueryRowContext(ctx, `SELECT count(*) FROM archived_scopes WHERE stream = ?`, stream).Scan(&n); err != nil {
		return false, fmt.Errorf("read archived scope %s: %w", stream, err)
	}
	return n > 0, nil
}

// ArchivedScopes lists the archived streams, sorted.
func (s *Store) ArchivedScopes(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT stream FROM archived_scopes ORDER BY stream`)
	if err != nil {
		return nil, fmt.Errorf("read archived scopes: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var st string
		if err := rows.Scan(&st); err != nil {
			return nil, fmt.Errorf("read archived scopes: %w", err)
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read archived scopes: %w", err)
	}
	return out, nil
}

// ScopeRow is what the index knows of one stream, for the scope list.
type ScopeRow struct {
	Stream       string
	Dir          string // scopes.cwd; "" for the global stream or when none was seen
	Archived     bool
	Entries      map[string]int // by status; only the statuses that occur
	Sessions     int
	Checkpoints  int    // memory/ops events
	Events       uint64 // the cursor: events folded
	LastActivity string // time of the stream's last folded event
}

// scopeRowsSQL gathers every stream's row in one statement: the entry
// counts come from entry_status_counts (kept by trigger), the others
// from an index each (sessions' rows, events_memory_ops, the events
// (stream, seq) key), so 200 scopes of 50,000 entries cost a few rows a
// scope, not a scan of the entries.
const scopeRowsSQL = `
WITH st AS (SELECT stream, seq FROM cursors WHERE seq > 0 AND (?1 = '' OR stream = ?1)),
ent AS (SELECT scope, json_group_object(status, n) AS by_status FROM entry_status_counts
        WHERE n > 0 AND (?1 = '' OR scope = ?1) GROUP BY scope),
ses AS (SELECT stream, count(*) AS n FROM sessions WHERE ?1 = '' OR stream = ?1 GROUP BY stream),
ck AS (SELECT stream, count(*) AS n FROM events WHERE type = 'memory/ops' AND (?1 = '' OR stream = ?1) GROUP BY stream)
SELECT st.stream, coalesce(sc.cwd, ''), a.stream IS NOT NULL, coalesce(ent.by_status, '{}'),
       coalesce(ses.n, 0), coalesce(ck.n, 0), st.seq, coalesce(ev.time, '')
FROM st
LEFT JOIN scopes sc ON sc.stream = st.stream
LEFT JOIN archived_scopes a ON a.stream = st.stream
LEFT JOIN ent ON ent.scope = st.stream
LEFT JOIN ses ON ses.stream = st.stream
LEFT JOIN ck ON ck.stream = st.stream
LEFT JOIN events ev ON ev.stream = st.stream AND ev.seq = st.seq
ORDER BY st.stream`

// ScopeRows returns a row for each stream folded so far, sorted by
// stream; with stream != "", that stream's row only (none if it was
// never folded).
func (s *Store) ScopeRows(ctx context.Context, stream string) ([]ScopeRow, error) {
	rows, err := s.db.QueryContext(ctx, scopeRowsSQL, stream)
	if err != nil {
		return nil, fmt.Errorf("read scopes: %w", err)
	}
	defer rows.Close()
	var out []ScopeRow
	for rows.Next() {
		var r ScopeRow
		var byStatus string
		var seq int64
		if err := rows.Scan(&r.Stream, &r.Dir, &r.Archived, &byStatus, &r.Sessions, &r.Checkpoints, &seq, &r.LastActivity); err != nil {
			return nil, fmt.Errorf("read scopes: %w", err)
		}
		r.Events = uint64(seq)
		r.Entries = map[string]int{}
		if err := json.Unmarshal([]byte(byStatus), &r.Entries); err != nil {
			return nil, fmt.Errorf("read scopes: entries of %s: %w", r.Stream, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read scopes: %w", err)
	}
	return out, nil
}

// PurgedRows is what PurgeStream deleted.
type PurgedRows struct {
	Events int      // events rows of the stream
	Files  []string // the files rows of its projections (their files are the caller's to remove)
	Days   []string // the days whose sessions/<day>.md held a block of the stream (queued to render again)
}

// PurgeStream deletes, in one transaction, every row of stream: its
// events and their episodes and full-text rows, its entries with their
// versions and full-text rows, sessions, shown rows, the scope's
// directory and archive mark, its summary versions, the files rows of
// scopes/<stream>/ and archived/<stream>/ (with their kept texts and
// intents), its queued files, and its cursor. The days whose session
// file held a block of the stream are queued, to render again without
// it. Purging a stream with no rows is not an error. It is for a stream
// whose log is gone (events.Log.Drop): the rows are not a projection of
// anything any more, and nothing folds them back.
func (s *Store) PurgeStream(ctx context.Context, stream string) (PurgedRows, error) {
	s.entriesChanged()
	defer s.entriesChanged()
	var out PurgedRows
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRow(`SELECT count(*) FROM events WHERE stream = ?`, stream).Scan(&out.Events); err != nil {
			return err
		}
		var err error
		if out.Days, err = strColumn(tx, `SELECT DISTINCT substr(time, 1, 10) FROM events
				WHERE stream = ? AND type IN ('compaction/summary', 'session/end') ORDER BY 1`, stream); err != nil {
			return err
		}
		like := func(dir string) string { return escapeLike(dir+"/"+stream+"/") + "%" }
		if out.Files, err = strColumn(tx, `SELECT path FROM files WHERE path LIKE ?1 ESCAPE '\' OR path LIKE ?2 ESCAPE '\' ORDER BY path`,
			like("scopes"), like("archived")); err != nil {
			return err
		}
		for _, q := range []string{
			`DELETE FROM episodes_fts WHERE rowid IN (SELECT n FROM events WHERE stream = ?1)`,
			`DELETE FROM episodes WHERE n IN (SELECT n FROM events WHERE stream = ?1)`,
			`DELETE FROM events WHERE stream = ?1`,
			`DELETE FROM entries_fts WHERE rowid IN (SELECT n FROM entries WHERE scope = ?1)`,
			`DELETE FROM entry_versions WHERE stream = ?1 OR entry_id IN (SELECT id FROM entries WHERE scope = ?1)`,
			`DELETE FROM entries WHERE scope = ?1`,
			`DELETE FROM entry_counts WHERE scope = ?1`,
			`DELETE FROM entry_status_counts WHERE scope = ?1`,
			`DELETE FROM sessions WHERE stream = ?1`,
			`DELETE FROM shown WHERE stream = ?1`,
			`DELETE FROM aliases WHERE scope = ?1`,
			`DELETE FROM procedure_versions WHERE stream = ?1 OR procedure_id IN (SELECT id FROM procedures WHERE scope = ?1)`,
			`DELETE FROM procedures WHERE scope = ?1`,
			`DELETE FROM scopes WHERE stream = ?1`,
			`DELETE FROM archived_scopes WHERE stream = ?1`,
			`DELETE FROM summary_versions WHERE stream = ?1`,
			`DELETE FROM projection_queue WHERE key = 'scope/' || ?1`,
			`DELETE FROM cursors WHERE stream = ?1`,
			`DELETE FROM vectors WHERE stream = ?1`,
			// Rowids of the deleted events may be given again: the
			// episode cursor of the vectors goes back below them.
			`UPDATE vector_state SET episodes_upto = min(episodes_upto, coalesce((SELECT max(n) FROM events), 0)) WHERE ?1 = ?1`,
			// The oldest event may have been the scope's (a rare full
			// read: purge is not on any hot path).
			`DELETE FROM event_span WHERE ?1 = ?1`,
			`INSERT INTO event_span (id, first_time) SELECT 1, min(time) FROM events WHERE ?1 = ?1 HAVING min(time) IS NOT NULL`,
		} {
			if _, err := tx.Exec(q, stream); err != nil {
				return fmt.Errorf("%s: %w", strings.Fields(q)[2], err)
			}
		}
		for _, p := range out.Files {
			for _, q := range []string{`DELETE FROM files WHERE path = ?`, `DELETE FROM file_texts WHERE path = ?`, `DELETE FROM files_intent WHERE path = ?`} {
				if _, err := tx.Exec(q, p); err != nil {
					return err
				}
			}
		}
		for _, d := range out.Days {
			if _, err := tx.Exec(queueSQL, "day/"+d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return PurgedRows{}, fmt.Errorf("purge stream %s from the index: %w", stream, err)
	}
	return out, nil
}

// Compact makes the index file hold no byte of a deleted row: it merges
// the full-text indexes (a deleted row's terms stay in an FTS5 segment
// until a merge rewrites it), rebuilds the file (VACUUM: free pages go),
// and truncates the write-ahead log, whose frames may still hold old
// pages. It rewrites the whole file, so it costs about a copy of it; a
// purge runs it once.
func (s *Store) Compact(ctx context.Context) error {
	for _, q := range []string{
		`INSERT INTO episodes_fts (episodes_fts) VALUES ('optimize')`,
		`INSERT INTO entries_fts (entries_fts) VALUES ('optimize')`,
		`VACUUM`,
	} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("compact %s: %s: %w", s.path, q, err)
		}
	}
	// A reader holding an old snapshot keeps the checkpoint from
	// finishing (it answers busy rather than failing): try again while
	// readers come and go.
	const tries = 100
	for i := 0; ; i++ {
		var busy, logFrames, done int
		if err := s.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &done); err != nil {
			return fmt.Errorf("compact %s: checkpoint: %w", s.path, err)
		}
		if busy == 0 {
			return nil
		}
		if i == tries {
			return fmt.Errorf("compact %s: the write-ahead log stayed in use by readers %d times; it still holds old pages until a checkpoint finishes (run the command again)", s.path, tries)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("compact %s: %w", s.path, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func strColumn(tx *sql.Tx, query string, args ...any) ([]string, error) {
	rows, err := tx.Query(query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// escapeLike escapes the LIKE wildcards of s (with ESCAPE '\').
func escapeLike(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}
