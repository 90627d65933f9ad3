package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// What a backup needs of the index: a consistent copy of it while the
// writer goes on, and how far that copy reaches.

// VacuumInto writes a consistent copy of the index to path (which must
// not exist) with VACUUM INTO: one read transaction, so the copy is the
// index as of one commit, however the writer goes on meanwhile. It
// returns the copy's cursors, read from the copy itself: what the copy
// reflects, not what the live index reached after it. The copy is
// fsynced before VacuumInto returns.
func (s *Store) VacuumInto(ctx context.Context, path string) (map[string]uint64, error) {
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("snapshot index into %s: the file exists", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("snapshot index into %s: %w", path, err)
	}
	if err := s.vacuumInto(ctx, path); err != nil {
		return nil, fmt.Errorf("snapshot index into %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("snapshot index into %s: %w", path, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("sync index snapshot %s: %w", path, err)
	}
	return SnapshotCursors(path)
}

// SnapshotCursors reads the cursors of the index file at path (a copy
// VacuumInto made) without migrating or changing it.
func SnapshotCursors(path string) (map[string]uint64, error) {
	st, err := OpenReadOnly(path)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return st.Cursors()
}

// CountEventsAfter counts the events of stream past seq whose type is
// not except: a backup asks it to tell whether anything but its own
// records (maintenance/backup events) came since the last backup.
func (s *Store) CountEventsAfter(ctx context.Context, stream string, seq uint64, except string) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE stream = ? AND seq > ? AND type <> ?`,
		stream, int64(seq), except).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count events of %s after seq %d: %w", stream, seq, err)
	}
	return n, nil
}

// vacuumCacheKiB is the page cache of the connection that runs VACUUM
// INTO. With the writer's 128 MiB a copy of a 500 MB index held about
// 750 MB of memory and took longer (the copy's pages stay cached as it
// is written); with 8 MiB, 60 MB and about a quarter less time.
const vacuumCacheKiB = 8 << 10

// vacuumInto runs VACUUM INTO on a connection of its own with a small
// page cache, then gives the connection its cache size back.
func (s *Store) vacuumInto(ctx context.Context, path string) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var cache int64
	if err := conn.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&cache); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA cache_size = %d`, -vacuumCacheKiB)); err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, `VACUUM INTO ?`, path)
	if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf(`PRAGMA cache_size = %d`, cache)); err == nil {
		err = rerr
	}
	return err
}
