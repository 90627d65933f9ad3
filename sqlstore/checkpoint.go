package sqlstore

import "time"

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
