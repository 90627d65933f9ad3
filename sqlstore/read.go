package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// preparedRead returns query prepared on the pool, preparing it the
// first time: the reads every write makes (the dedupe look-up, the entry
// a remember returns) would otherwise parse their SQL on every call, which
// costs more than running it. database/sql prepares it again on each
// connection that first runs it.
func (s *Store) preparedRead(ctx context.Context, query string) (*sql.Stmt, error) {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	if st, ok := s.readStmts[query]; ok {
		return st, nil
	}
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if s.readStmts == nil {
		s.readStmts = map[string]*sql.Stmt{}
	}
	s.readStmts[query] = st
	return st, nil
}

func (s *Store) preparedQuery(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := s.preparedRead(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// preparedQueryRow is QueryRowContext through a prepared statement; a
// failed prepare is reported by the row's Scan.
func (s *Store) preparedQueryRow(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := s.preparedRead(ctx, query)
	if err != nil {
		return s.db.QueryRowContext(ctx, query, args...) // reports the same error
	}
	return st.QueryRowContext(ctx, args...)
}

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

// StoredEvent is what the index holds of an event that dedupe compares a
// re-sent one with: where it is, and its content.
type StoredEvent struct {
	Seq                 uint64
	Type, Time, Session string
	Data                string // the data object as logged; "" when absent
}

// ExistingEvents returns which of ids are already events of stream, with
// what they hold, in one query.
func (s *Store) ExistingEvents(ctx context.Context, stream string, ids []string) (map[string]StoredEvent, error) {
	found := map[string]StoredEvent{}
	if len(ids) == 0 {
		return found, nil
	}
	var rows *sql.Rows
	var err error
	if len(ids) == 1 {
		// One id (a remember, a forget): the index, without json_each.
		rows, err = s.preparedQuery(ctx,
			`SELECT id, seq, type, time, session, coalesce(data, '') FROM events WHERE stream = ? AND id = ?`, stream, ids[0])
	} else {
		arr, merr := json.Marshal(ids)
		if merr != nil {
			return nil, fmt.Errorf("look up event ids of %s: %w", stream, merr)
		}
		rows, err = s.preparedQuery(ctx,
			`SELECT id, seq, type, time, session, coalesce(data, '') FROM events WHERE stream = ? AND id IN (SELECT value FROM json_each(?))`,
			stream, string(arr))
	}
	if err != nil {
		return nil, fmt.Errorf("look up event ids of %s: %w", stream, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var ev StoredEvent
		if err := rows.Scan(&id, &ev.Seq, &ev.Type, &ev.Time, &ev.Session, &ev.Data); err != nil {
			return nil, fmt.Errorf("look up event ids of %s: %w", stream, err)
		}
		found[id] = ev
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

// EventFilter selects events; the zero value selects all of them.
type EventFilter struct {
	Stream   string // "": every stream
	Type     string // "": every type
	Session  string // "": every session (events of no session too)
	ID       string // "": any id
	IDPrefix string // "": any id; else ids that start with it
}

// Events returns the events f selects, by stream and seq.
func (s *Store) Events(ctx context.Context, f EventFilter) ([]Event, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT stream, seq, id, type, time, session, data FROM events
		WHERE (?1 = '' OR stream = ?1) AND (?2 = '' OR type = ?2) AND (?3 = '' OR session = ?3)
		  AND (?4 = '' OR id = ?4) AND (?5 = '' OR substr(id, 1, length(?5)) = ?5)
		ORDER BY stream, seq`, f.Stream, f.Type, f.Session, f.ID, f.IDPrefix)
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		ev, err := scanEvent(rows)
		if err != nil {
			return nil, fmt.Errorf("read events: %w", err)
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	return out, nil
}

// scanEvent reads stream, seq, id, type, time, session, data.
func scanEvent(sc interface{ Scan(...any) error }) (Event, error) {
	var ev Event
	var seq int64
	var data sql.NullString
	if err := sc.Scan(&ev.Stream, &seq, &ev.ID, &ev.Type, &ev.Time, &ev.Session, &data); err != nil {
		return Event{}, err
	}
	ev.Seq = uint64(seq)
	if data.Valid {
		ev.Data = json.RawMessage(data.String)
	}
	return ev, nil
}

// EventSeq returns the seq of event id in stream; ok is false when the
// index has no such event.
func (s *Store) EventSeq(ctx context.Context, stream, id string) (seq uint64, ok bool, err error) {
	var n int64
	err = s.db.QueryRowContext(ctx, `SELECT seq FROM events WHERE stream = ? AND id = ?`, stream, id).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("look up event %s in %s: %w", id, stream, err)
	}
	return uint64(n), true, nil
}

// EventAt returns the id and time of the event at seq of stream; ok is
// false when the index has no such event.
func (s *Store) EventAt(ctx context.Context, stream string, seq uint64) (id, at string, ok bool, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT id, time FROM events WHERE stream = ? AND seq = ?`, stream, int64(seq)).Scan(&id, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, fmt.Errorf("look up seq %d of %s: %w", seq, stream, err)
	}
	return id, at, true, nil
}

// EpisodeText is a row of the episode_texts view (the text recall reads
// of an episode, computed in SQL) with the data of its event.
type EpisodeText struct {
	Type     string
	Data     json.RawMessage
	Text     string
	Injected bool
}

// EpisodeTexts returns every row of the episode_texts view.
func (s *Store) EpisodeTexts(ctx context.Context) ([]EpisodeText, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT v.type, e.data, v.text, v.injected
		FROM episode_texts v JOIN events e ON e.stream = v.stream AND e.seq = v.seq ORDER BY e.stream, e.seq`)
	if err != nil {
		return nil, fmt.Errorf("read episode texts: %w", err)
	}
	defer rows.Close()
	var out []EpisodeText
	for rows.Next() {
		var t EpisodeText
		var data sql.NullString
		if err := rows.Scan(&t.Type, &data, &t.Text, &t.Injected); err != nil {
			return nil, fmt.Errorf("read episode texts: %w", err)
		}
		t.Data = json.RawMessage(data.String)
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read episode texts: %w", err)
	}
	return out, nil
}
