package sqlstore

import (
	"context"
	"fmt"
	"time"
)

// checkpointEvery is how often the checkpointer copies the WAL into the
// database. A PASSIVE checkpoint takes no lock a writer waits for: it
// copies what no reader still needs and leaves the rest for the next
// turn, so folds never wait for one.
const checkpointEvery = 200 * time.Millisecond

// startCheckpointer runs PRAGMA wal_checkpoint(PASSIVE) in the
// background until Close (which checkpoints once more as SQLite closes
// the last connection). The writer connections have wal_autocheckpoint
// off, so without it the WAL would only grow.
func (s *Store) startCheckpointer() {
	s.ckptStop, s.ckptDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.ckptDone)
		t := time.NewTicker(checkpointEvery)
		defer t.Stop()
		for {
			select {
			case <-s.ckptStop:
				return
			case <-t.C:
				// An error (a busy database) only means this turn did
				// less; the next one tries again.
				_, _ = s.db.Exec(`PRAGMA wal_checkpoint(PASSIVE)`)
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
