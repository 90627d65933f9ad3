package sqlstore

import (
	"context"
	"fmt"
	"time"
)

// When the checkpointer copies the WAL into the database. A PASSIVE
// checkpoint takes no lock a writer waits for, but it syncs the WAL and
// then the database file, and those syncs share the disk with the event
// log's: a write acknowledged while one runs waits for the disk behind
// it. So the checkpointer copies in the pauses between writes, and under
// writes that never pause, at most once per checkpointLatest, which
// bounds the WAL by what that much writing adds.
const (
	checkpointTick   = 20 * time.Millisecond // how often it looks
	checkpointQuiet  = 60 * time.Millisecond // a pause this long since the last commit is its moment
	checkpointLatest = 2 * time.Second       // how long a commit waits at most for its copy
	checkpointIdle   = 10 * time.Second      // a turn without any commit counted (other writers)
)

// noteCommit counts a write transaction committed, for the checkpointer.
func (s *Store) noteCommit() {
	s.commits.Add(1)
	s.lastCommit.Store(time.Now().UnixNano())
}

// startCheckpointer runs PRAGMA wal_checkpoint(PASSIVE) in the
// background until Close (which checkpoints once more as SQLite closes
// the last connection). The writer connections have wal_autocheckpoint
// off, so without it the WAL would only grow. Folds count their commits
// (noteCommit); the rarer writes that do not are copied by the turn the
// checkpointer takes every checkpointIdle anyway.
func (s *Store) startCheckpointer() {
	s.ckptStop, s.ckptDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.ckptDone)
		t := time.NewTicker(checkpointTick)
		defer t.Stop()
		seen := s.commits.Load()
		var pending time.Time // the first commit seen since the last copy
		last := time.Now()
		for {
			select {
			case <-s.ckptStop:
				return
			case now := <-t.C:
				if c := s.commits.Load(); c != seen {
					seen = c
					if pending.IsZero() {
						pending = now
					}
				}
				quiet := now.Sub(time.Unix(0, s.lastCommit.Load())) >= checkpointQuiet
				due := !pending.IsZero() && (quiet || now.Sub(pending) >= checkpointLatest)
				if !due && now.Sub(last) < checkpointIdle {
					continue
				}
				// An error (a busy database) only means this turn did
				// less; the next one tries again.
				_, _ = s.db.Exec(`PRAGMA wal_checkpoint(PASSIVE)`)
				pending, last = time.Time{}, now
			}
		}
	}()
}

func (s *Store) stopCheckpointer() {
	if s.ckptStop == nil {
		return
	}
	close(s.ckptStop)
	<-s.ckptDone
	s.ckptStop = nil
}

// CheckpointAll copies the whole WAL into the database file and empties
// it (wal_checkpoint(TRUNCATE)), waiting for readers and writers as it
// must: for a caller that needs index.db to hold everything committed,
// such as a test comparing the file's bytes. It blocks writers while it
// runs; the background checkpointer never does.
func (s *Store) CheckpointAll(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return fmt.Errorf("checkpoint %s: %w", s.path, err)
	}
	return nil
}
