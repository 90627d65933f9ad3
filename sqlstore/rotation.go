package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Session rotation and the record of backups: the day_rotation row and
// the events_backups index (migration 00010).

// Rotated returns the cut-off day of session rotation (YYYY-MM-DD; day
// files of earlier days live in sessions/archive/), or "" when no
// rotation was folded.
func (r Reader) Rotated(ctx context.Context) (string, error) {
	var before string
	err := r.q.QueryRowContext(ctx, `SELECT before FROM day_rotation WHERE id = 1`).Scan(&before)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read the rotation cut-off: %w", err)
	}
	return before, nil
}

// BlockDaysBetween lists the days in [from, to) on which an event may
// have put a block in a day file, in order ("" for from: no lower
// bound).
func (r Reader) BlockDaysBetween(ctx context.Context, from, to string) ([]string, error) {
	rows, err := r.q.QueryContext(ctx, `SELECT DISTINCT substr(time, 1, 10) FROM events
		WHERE type IN ('compaction/summary', 'session/end') AND substr(time, 1, 10) >= ? AND substr(time, 1, 10) < ?
		ORDER BY 1`, from, to)
	if err != nil {
		return nil, fmt.Errorf("list days before %s: %w", to, err)
	}
	defer rows.Close()
	var days []string
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			return nil, fmt.Errorf("list days before %s: %w", to, err)
		}
		days = append(days, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list days before %s: %w", to, err)
	}
	return days, nil
}

// Rotate raises the cut-off day of session rotation to before (a
// maintenance/rotate event's data.before) and returns the cut-off it
// had ("" for none); a before at or below it changes nothing and
// returns it too.
func (t *FoldTx) Rotate(before string) (prev string, err error) {
	if prev, err = t.Reader().Rotated(context.Background()); err != nil {
		return "", err
	}
	if before <= prev {
		return prev, nil
	}
	if _, err := t.exec(`INSERT INTO day_rotation (id, before) VALUES (1, ?)
		ON CONFLICT (id) DO UPDATE SET before = excluded.before`, before); err != nil {
		return "", fmt.Errorf("write the rotation cut-off: %w", err)
	}
	return prev, nil
}

// LastBackup returns the time of the newest maintenance/backup event
// ("" for none) and, when there is none, of the oldest event ("" for an
// empty index), as the events say them (RFC 3339, compared as text).
// Both are index look-ups: the first through events_backups, the second
// the one row of event_span that folds keep (reading every event took
// 1 s at 1M events, and serve asks at every session start until the
// first backup).
func (s *Store) LastBackup(ctx context.Context) (last, first string, err error) {
	var l, f sql.NullString
	if err := s.db.QueryRowContext(ctx, `SELECT max(time) FROM events WHERE type = 'maintenance/backup'`).Scan(&l); err != nil {
		return "", "", fmt.Errorf("read the last backup: %w", err)
	}
	if l.Valid {
		return l.String, "", nil
	}
	err = s.db.QueryRowContext(ctx, `SELECT first_time FROM event_span`).Scan(&f)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", "", fmt.Errorf("read the oldest event: %w", err)
	}
	return "", f.String, nil
}
