package events

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// ErrUnknownStream is returned (wrapped, with the name) by Drop for a
// stream the log does not hold.
var ErrUnknownStream = errors.New("events: no such stream")

// Drop takes stream out of the log, as the first step of purging it: it
// stops the stream's writer after the appends already queued are
// committed, closes the stream's open segment, forgets the stream, and
// renames its directory to to (an absolute path on the same file
// system, outside the log's stream names), fsyncing both parent
// directories so the rename is durable before Drop returns. The caller
// removes to. From then on the stream has no events: an Append to it
// starts a fresh stream at seq 1, with a new directory.
//
// The rename is the commit point: a crash before it leaves the stream
// whole, one after it leaves the stream gone from the log (to still
// holds its segments until the caller removes them).
func (l *Log) Drop(stream, to string) error {
	if l.readOnly {
		return ErrReadOnly
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	s := l.streams[stream]
	if s == nil {
		l.mu.Unlock()
		return fmt.Errorf("drop stream %s: %w", stream, ErrUnknownStream)
	}
	// The caller appends nothing to the stream while Drop runs (the
	// engine holds its intake lock): an Append after Drop makes a new
	// stream in a new directory.
	delete(l.streams, stream)
	// A quarantine leaves with its stream (its marker is in the
	// directory): a new stream of that name starts sound.
	delete(l.quarantined, stream)
	delete(l.gaps, stream)
	l.mu.Unlock()

	s.sendMu.Lock()
	s.closed = true
	if s.started {
		close(s.reqs)
	}
	s.sendMu.Unlock()
	if s.started {
		<-s.done // the writer committed what was queued and closed its segment
	}

	if _, err := l.fs.Stat(s.dir); errors.Is(err, fs.ErrNotExist) {
		return nil // the stream never reached the disk
	}
	if err := l.fs.Rename(s.dir, to); err != nil {
		err = fmt.Errorf("drop stream %s: %w", stream, err)
		// Put the stream back as it is on disk, failed: its writer is
		// stopped, and a fresh one must not write seq 1 into the old
		// directory. Appends fail until the log is reopened.
		segs, last := s.snapshot()
		back := l.newStream(stream)
		back.segs, back.lastSeq = segs, last
		back.failed = fmt.Errorf("append to stream %s: %w: %w", stream, ErrStreamFailed, err)
		l.mu.Lock()
		l.streams[stream] = back
		l.mu.Unlock()
		return err
	}
	for _, d := range []string{l.dir, filepath.Dir(to)} {
		if err := syncDir(l.fs, d); err != nil {
			return fmt.Errorf("drop stream %s: sync %s: %w", stream, d, err)
		}
	}
	return nil
}
