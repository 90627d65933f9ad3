package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// Cursor returns the last seq of stream folded into the index (0 when the
// stream was never folded).
func (s *Store) Cursor(stream string) (uint64, error) {
	var seq int64
	err := s.db.QueryRow(`SELECT seq FROM cursors WHERE stream = ?`, stream).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read cursor of %s: %w", stream, err)
	}
	return uint64(seq), nil
}

// Cursors returns the cursor of every stream folded so far.
func (s *Store) Cursors() (map[string]uint64, error) {
	rows, err := s.db.Query(`SELECT stream, seq FROM cursors ORDER BY stream`)
	if err != nil {
		return nil, fmt.Errorf("read cursors: %w", err)
	}
	defer rows.Close()
	out := map[string]uint64{}
	for rows.Next() {
		var stream string
		var seq int64
		if err := rows.Scan(&stream, &seq); err != nil {
			return nil, fmt.Errorf("read cursors: %w", err)
		}
		out[stream] = uint64(seq)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read cursors: %w", err)
	}
	return out, nil
}

// ExistingIDs reports which of ids are already events of stream, in one
// query whatever the number of ids (they travel as one JSON array). The
// result holds only the ids found.
func (s *Store) ExistingIDs(ctx context.Context, stream string, ids []string) (map[string]bool, error) {
	found := map[string]bool{}
	if len(ids) == 0 {
		return found, nil
	}
	arr, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("look up event ids of %s: %w", stream, err)
	}
	rows, err := s.db.QueryContext(ctx,
		`SELECT id FROM events WHERE stream = ? AND id IN (SELECT value FROM json_each(?))`,
		stream, string(arr))
	if err != nil {
		return nil, fmt.Errorf("look up event ids of %s: %w", stream, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("look up event ids of %s: %w", stream, err)
		}
		found[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("look up event ids of %s: %w", stream, err)
	}
	return found, nil
}

// SessionCwd returns the working directory recorded for session: the cwd
// of its session/start, else the first cwd any of its events carried.
// When the session appears in several streams, the earliest started one
// with a cwd wins (ties by stream name), so the answer does not depend on
// fold order. ok is false when no event of the session had a cwd.
func (s *Store) SessionCwd(ctx context.Context, session string) (cwd string, ok bool, err error) {
	err = s.db.QueryRowContext(ctx,
		`SELECT cwd FROM sessions WHERE session = ? AND cwd <> ''
		 ORDER BY first_time, stream LIMIT 1`, session).Scan(&cwd)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read cwd of session %s: %w", session, err)
	}
	return cwd, true, nil
}

// StoreStats counts what the index holds.
type StoreStats struct {
	Streams       int64
	Events        int64
	Episodes      int64
	Sessions      int64
	Entries       int64
	ActiveEntries int64
	DBBytes       int64 // page_count × page_size of the main file
	WALBytes      int64 // size of the -wal file (0 when absent)
}

// Stats counts rows and bytes. Counting scans the tables, so it costs
// tens of milliseconds per million events.
func (s *Store) Stats(ctx context.Context) (StoreStats, error) {
	var st StoreStats
	err := s.db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM cursors),
		(SELECT count(*) FROM events),
		(SELECT count(*) FROM episodes),
		(SELECT count(*) FROM sessions),
		(SELECT count(*) FROM entries),
		(SELECT count(*) FROM entries WHERE status = 'active'),
		(SELECT page_count FROM pragma_page_count()) * (SELECT page_size FROM pragma_page_size())`).
		Scan(&st.Streams, &st.Events, &st.Episodes, &st.Sessions, &st.Entries, &st.ActiveEntries, &st.DBBytes)
	if err != nil {
		return StoreStats{}, fmt.Errorf("read index stats: %w", err)
	}
	if fi, err := os.Stat(s.path + "-wal"); err == nil {
		st.WALBytes = fi.Size()
	}
	return st, nil
}
