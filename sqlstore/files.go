package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
)

// The record of the Markdown files the projector writes after a fold
// commits (projector/queue.go): projection_queue holds the groups of
// files to write, files_intent what a write is about to put in place,
// files and file_texts what was written. Each method below that writes
// is one transaction; the projector serializes them with its folds.

// QueueFiles queues the groups of files keys outside a fold.
func (s *Store) QueueFiles(ctx context.Context, keys []string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		for _, k := range keys {
			if _, err := tx.Exec(queueSQL, k); err != nil {
				return fmt.Errorf("queue files %s: %w", k, err)
			}
		}
		return nil
	})
}

// QueuedFiles counts the groups of files waiting to be written.
func (s *Store) QueuedFiles(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM projection_queue`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read projection queue: %w", err)
	}
	return n, nil
}

// FilePaths lists the paths the files table records, in order.
func (s *Store) FilePaths(ctx context.Context) ([]string, error) {
	var paths []string
	if err := s.db.SelectContext(ctx, &paths, `SELECT path FROM files ORDER BY path`); err != nil {
		return nil, fmt.Errorf("read files: %w", err)
	}
	return paths, nil
}

// BlockDays lists the days (YYYY-MM-DD, in order) on which an event may
// have put a block in a day file: compaction summaries and session ends.
func (s *Store) BlockDays(ctx context.Context) ([]string, error) {
	var days []string
	if err := s.db.SelectContext(ctx, &days, `SELECT DISTINCT substr(time, 1, 10) FROM events
		WHERE type IN ('compaction/summary', 'session/end') ORDER BY 1`); err != nil {
		return nil, fmt.Errorf("list days: %w", err)
	}
	return days, nil
}

// FileHashes returns the sha256 the files table records for path and
// the one files_intent says a write was about to put there ("" for
// none).
func (s *Store) FileHashes(ctx context.Context, path string) (recorded, intent string, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT coalesce((SELECT sha256 FROM files WHERE path = ?1), ''),
			coalesce((SELECT sha256 FROM files_intent WHERE path = ?1), '')`, path).Scan(&recorded, &intent)
	if err != nil {
		return "", "", fmt.Errorf("read files row of %s: %w", path, err)
	}
	return recorded, intent, nil
}

// FileIntent says that a write is about to put bytes hashing to SHA256
// at Path: after a crash in the middle, a file holding them is ours.
type FileIntent struct {
	Path   string
	SHA256 string
}

// RecordFileIntents records intents before their files are written.
func (s *Store) RecordFileIntents(ctx context.Context, intents []FileIntent) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		for _, in := range intents {
			if _, err := tx.Exec(`INSERT INTO files_intent (path, sha256) VALUES (?, ?)
					ON CONFLICT (path) DO UPDATE SET sha256 = excluded.sha256`, in.Path, in.SHA256); err != nil {
				return err
			}
		}
		return nil
	})
}

// FileIntents returns the intents not yet settled by RecordFiles, in
// path order.
func (s *Store) FileIntents(ctx context.Context) ([]FileIntent, error) {
	var out []FileIntent
	if err := s.db.SelectContext(ctx, &out, `SELECT path AS path, sha256 AS sha256 FROM files_intent ORDER BY path`); err != nil {
		return nil, fmt.Errorf("read files_intent: %w", err)
	}
	return out, nil
}

// FileWrite is what a write did to one projection file: removed it
// (Remove), or put bytes there that the other fields describe.
type FileWrite struct {
	Path      string
	Remove    bool
	SHA256    string
	Bytes     int64
	Stream    string
	Seq       uint64
	Positions string // JSON object, "{}" for none
	Time      string
	// KeepText keeps Text, the bytes written, in file_texts.
	KeepText bool
	Text     string
}

// RecordFiles records writes in the files table (and file_texts), settles
// their intents, and takes the groups done off projection_queue, all in
// one transaction.
func (s *Store) RecordFiles(ctx context.Context, writes []FileWrite, done []QueuedGroup) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		for _, w := range writes {
			if _, err := tx.Exec(`DELETE FROM files_intent WHERE path = ?`, w.Path); err != nil {
				return err
			}
			if w.Remove {
				if _, err := tx.Exec(`DELETE FROM files WHERE path = ?`, w.Path); err != nil {
					return err
				}
				if _, err := tx.Exec(`DELETE FROM file_texts WHERE path = ?`, w.Path); err != nil {
					return err
				}
				continue
			}
			if _, err := tx.Exec(`INSERT INTO files (path, sha256, bytes, stream, seq, positions, time)
				VALUES (?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (path) DO UPDATE SET sha256 = excluded.sha256, bytes = excluded.bytes,
					stream = excluded.stream, seq = excluded.seq, positions = excluded.positions, time = excluded.time`,
				w.Path, w.SHA256, w.Bytes, w.Stream, int64(w.Seq), w.Positions, w.Time); err != nil {
				return fmt.Errorf("record file %s: %w", w.Path, err)
			}
			if w.KeepText {
				if _, err := tx.Exec(`INSERT INTO file_texts (path, content) VALUES (?, ?)
					ON CONFLICT (path) DO UPDATE SET content = excluded.content`, w.Path, w.Text); err != nil {
					return fmt.Errorf("record file %s: %w", w.Path, err)
				}
			}
		}
		for _, q := range done {
			if _, err := tx.Exec(`DELETE FROM projection_queue WHERE key = ? AND gen = ?`, q.Key, q.Gen); err != nil {
				return fmt.Errorf("take %s off the queue: %w", q.Key, err)
			}
		}
		return nil
	})
}

// write runs fn in a write transaction and commits it.
func (s *Store) write(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}
