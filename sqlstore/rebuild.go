package sqlstore

import (
	"context"
	"fmt"
)

// What replay needs of an index beyond the fold: the settings of a
// rebuild, and a restore's cursor and look-ups.

// UseOneConnection limits the pool to one connection, so that a pragma
// reaches every statement, and sets its page cache to cacheKiB KiB. A
// rebuild uses it: one writer does all the work, and a smaller cache
// than a live index keeps (128 MiB) bounds its memory.
func (s *Store) UseOneConnection(ctx context.Context, cacheKiB int) error {
	s.db.SetMaxOpenConns(1)
	if _, err := s.db.ExecContext(ctx, fmt.Sprintf("PRAGMA cache_size = %d", -cacheKiB)); err != nil {
		return fmt.Errorf("set cache size: %w", err)
	}
	return nil
}

// BulkLoad switches an index between bulk loading (on: an in-memory
// journal, no syncs, so a crash may leave the file unusable: only for an
// index that is thrown away when loading fails) and the live settings
// Open uses (WAL, synchronous NORMAL). WAL mode is recorded in the
// database file, so it must be put back before the index is used as a
// live one. Use it on a store with one connection (UseOneConnection).
func (s *Store) BulkLoad(ctx context.Context, on bool) error {
	stmts := []string{
		`PRAGMA journal_mode = MEMORY`,
		`PRAGMA synchronous = OFF`,
	}
	if !on {
		stmts = []string{
			`PRAGMA synchronous = NORMAL`,
			`PRAGMA journal_mode = WAL`,
		}
	}
	for _, q := range stmts {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// SetCursor records that stream is folded up to seq, outside a fold: a
// restore's temporary index folds only the events that change one file,
// then says it reached the seq asked.
func (s *Store) SetCursor(ctx context.Context, stream string, seq uint64) error {
	if _, err := s.db.ExecContext(ctx, setCursorSQL, stream, int64(seq)); err != nil {
		return fmt.Errorf("write cursor of %s: %w", stream, err)
	}
	return nil
}

// BlockSpan is the stretch of one stream whose events hold the blocks
// of a day file.
type BlockSpan struct {
	Stream   string
	From, To uint64
}

// BlockSpans returns, per stream in name order, the first and last seq
// of the events that may hold a block of the day file of day
// (compaction summaries and session ends whose time starts with day).
func (s *Store) BlockSpans(ctx context.Context, day string) ([]BlockSpan, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT stream, min(seq), max(seq) FROM events
			WHERE substr(time, 1, 10) = ? AND type IN ('compaction/summary', 'session/end')
			GROUP BY stream ORDER BY stream`, day)
	if err != nil {
		return nil, fmt.Errorf("locate the blocks of %s: %w", day, err)
	}
	defer rows.Close()
	var out []BlockSpan
	for rows.Next() {
		var b BlockSpan
		var from, to int64
		if err := rows.Scan(&b.Stream, &from, &to); err != nil {
			return nil, fmt.Errorf("locate the blocks of %s: %w", day, err)
		}
		b.From, b.To = uint64(from), uint64(to)
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("locate the blocks of %s: %w", day, err)
	}
	return out, nil
}
