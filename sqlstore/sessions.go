package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// Session is a sessions row: what the index knows of one session in one
// stream.
type Session struct {
	Session, Stream     string
	Cwd                 string
	Origin, Parent      string
	AgentPreset         string
	StartedAt, EndedAt  string
	FirstSeq, LastSeq   uint64
	FirstTime, LastTime string
	Events              int64
	UserTurns           int64
	UserChars           int64
}

// Sessions returns every sessions row, by session and stream.
func (s *Store) Sessions(ctx context.Context) ([]Session, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT session, stream, cwd, origin, parent, agent_preset, started_at, ended_at,
			first_seq, last_seq, first_time, last_time, events, user_turns, user_chars
		FROM sessions ORDER BY session, stream`)
	if err != nil {
		return nil, fmt.Errorf("read sessions: %w", err)
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		var r Session
		if err := rows.Scan(&r.Session, &r.Stream, &r.Cwd, &r.Origin, &r.Parent, &r.AgentPreset, &r.StartedAt, &r.EndedAt,
			&r.FirstSeq, &r.LastSeq, &r.FirstTime, &r.LastTime, &r.Events, &r.UserTurns, &r.UserChars); err != nil {
			return nil, fmt.Errorf("read sessions: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read sessions: %w", err)
	}
	return out, nil
}

// SessionSpan is a session of a stream and the seqs its events span.
type SessionSpan struct {
	Session, Stream   string
	Cwd, Origin       string
	FirstSeq, LastSeq uint64
}

// SessionsWithTurns lists the sessions that had a user turn, of stream
// and session ("" for any), by stream and session: the only ones a
// checkpoint can be due for.
func (s *Store) SessionsWithTurns(ctx context.Context, stream, session string) ([]SessionSpan, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT session, stream, cwd, origin, first_seq, last_seq
		FROM sessions WHERE user_turns > 0 AND (?1 = '' OR stream = ?1) AND (?2 = '' OR session = ?2)
		ORDER BY stream, session`, stream, session)
	if err != nil {
		return nil, fmt.Errorf("read sessions: %w", err)
	}
	defer rows.Close()
	var out []SessionSpan
	for rows.Next() {
		var p SessionSpan
		var first, last int64
		if err := rows.Scan(&p.Session, &p.Stream, &p.Cwd, &p.Origin, &first, &last); err != nil {
			return nil, fmt.Errorf("read sessions: %w", err)
		}
		p.FirstSeq, p.LastSeq = uint64(first), uint64(last)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read sessions: %w", err)
	}
	return out, nil
}

// Claim is the end of the last range of a session's events a checkpoint
// claimed.
type Claim struct {
	Stream, Session string
	To              uint64
}

// CheckpointClaims returns, per session and stream, the largest data.to
// of its memory/ops events (found through the partial index
// events_memory_ops), for the sessions of stream and session ("" for
// any). Sessions whose claims name no positive seq are left out.
func (s *Store) CheckpointClaims(ctx context.Context, stream, session string) ([]Claim, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT stream, data ->> 'session', max(data ->> 'to')
		FROM events WHERE type = 'memory/ops' AND (?1 = '' OR stream = ?1) AND json_valid(data)
		  AND data ->> 'session' IS NOT NULL AND data ->> 'session' <> '' AND (?2 = '' OR data ->> 'session' = ?2)
		GROUP BY 1, 2`, stream, session)
	if err != nil {
		return nil, fmt.Errorf("read checkpoint claims: %w", err)
	}
	defer rows.Close()
	var out []Claim
	for rows.Next() {
		var c Claim
		var to sql.NullInt64
		if err := rows.Scan(&c.Stream, &c.Session, &to); err != nil {
			return nil, fmt.Errorf("read checkpoint claims: %w", err)
		}
		if to.Valid && to.Int64 > 0 {
			c.To = uint64(to.Int64)
			out = append(out, c)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read checkpoint claims: %w", err)
	}
	return out, nil
}

// ScanSessionEvents calls fn, in seq order, for each event of session in
// stream with seq in from..to, until fn returns an error (which it
// returns).
//
// It runs for every checkpoint over every pending session, so it reads
// only the columns the arguments do not already say: the stream and the
// session of each event are filled in from them.
func (s *Store) ScanSessionEvents(ctx context.Context, stream, session string, from, to uint64, fn func(Event) error) error {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, id, type, time, data FROM events
		WHERE stream = ? AND seq BETWEEN ? AND ? AND session = ? ORDER BY seq`,
		stream, int64(from), int64(to), session)
	if err != nil {
		return fmt.Errorf("read events of session %s: %w", session, err)
	}
	defer rows.Close()
	for rows.Next() {
		// Scanned into locals, not into an Event: an Event whose fields
		// Scan is given escapes to the heap whole, 112 bytes a row where
		// the three strings take 48.
		var seq int64
		var id, typ, at string
		var data sql.NullString
		if err := rows.Scan(&seq, &id, &typ, &at, &data); err != nil {
			return fmt.Errorf("read events of session %s: %w", session, err)
		}
		ev := Event{Stream: stream, Seq: uint64(seq), ID: id, Type: typ, Time: at, Session: session}
		if data.Valid {
			ev.Data = json.RawMessage(data.String)
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read events of session %s: %w", session, err)
	}
	return nil
}

// SessionLastTimes returns the time of the last event of every session
// (sessions.last_time), in no order: times carry their own offsets, so a
// caller compares them parsed.
func (s *Store) SessionLastTimes(ctx context.Context) ([]string, error) {
	var out []string
	if err := s.db.SelectContext(ctx, &out, `SELECT last_time FROM sessions`); err != nil {
		return nil, fmt.Errorf("read session times: %w", err)
	}
	return out, nil
}
