package dsh

import (
	"fmt"
	"io"
	"os"

	"dshmem/events"
)

// Follower reads a session log that the host may still be writing. Each
// Poll returns the envelopes of the frames (or lines) completed since the
// previous one. A half-written last frame or line is waited for, not an
// error; Offset only ever moves to the end of a whole frame or line, so a
// watcher that saves Offset and later resumes with NewFollower(path, saved)
// gets every event exactly once.
//
// A Follower is not safe for concurrent use.
type Follower struct {
	path    string
	zstd    bool
	off     int64 // end of the last whole frame or line consumed
	m       *mapper
	pending int64
}

// NewFollower follows path from offset, which must be 0 or an offset that a
// Follower or ReadFile (Session.End) returned for the same file.
func NewFollower(path string, offset int64) *Follower {
	return &Follower{path: path, zstd: isZstd(path), off: offset}
}

// Offset is the end of the last whole frame or line that Poll consumed.
func (f *Follower) Offset() int64 { return f.off }

// Pending is how many bytes after Offset the last Poll found but could not
// use yet (a frame or line the host is still writing).
func (f *Follower) Pending() int64 { return f.pending }

// Header is the session header, or nil before it has been read.
func (f *Follower) Header() *Header {
	if f.m == nil || f.m.header == nil {
		return nil
	}
	h := *f.m.header
	return &h
}

// Stats counts what this Follower has produced since it was created (the
// replay up to a resume offset is not counted).
func (f *Follower) Stats() Stats {
	s := newStats()
	if f.m != nil {
		s = f.m.stats
	}
	s.TornBytes = f.pending // also while not even the header is whole
	return s
}

// Poll reads what the host appended since the last call. It returns no
// events and no error while nothing new is whole. On corruption it returns
// the events before the bad frame together with a *CorruptError, and stays
// at the bad frame's offset.
func (f *Follower) Poll() ([]events.Envelope, error) {
	fh, err := os.Open(f.path)
	if err != nil {
		return nil, fmt.Errorf("follow session log %s: %w", f.path, err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("follow session log %s: %w", f.path, err)
	}
	if st.Size() < f.off {
		return nil, fmt.Errorf("follow session log %s: size %d < offset %d: %w", f.path, st.Size(), f.off, ErrShrunk)
	}
	if f.m == nil {
		return f.start(fh)
	}
	if _, err := fh.Seek(f.off, io.SeekStart); err != nil {
		return nil, fmt.Errorf("follow session log %s: %w", f.path, err)
	}
	b, err := io.ReadAll(fh)
	if err != nil {
		return nil, fmt.Errorf("follow session log %s: %w", f.path, err)
	}
	return f.consume(b, f.off)
}

// start reads the log from its beginning: the header, then (when resuming)
// every chunk up to the saved offset without emitting, so that tool names
// and already-mapped message ids are known exactly as they would be to a
// Follower that never stopped.
func (f *Follower) start(fh *os.File) ([]events.Envelope, error) {
	b, err := io.ReadAll(fh)
	if err != nil {
		return nil, fmt.Errorf("follow session log %s: %w", f.path, err)
	}
	chunks, t, splitErr := split(f.path, b, 0)
	m := newMapper()
	m.discarded = f.off > 0
	i := 0
	for ; i < len(chunks) && chunks[i].End <= f.off; i++ {
		if _, err := m.feed(f.path, chunks[i], f.zstd); err != nil {
			return nil, err
		}
	}
	if f.off > 0 && (i == 0 || chunks[i-1].End != f.off || m.header == nil) {
		if splitErr != nil {
			return nil, splitErr // damage before the saved offset
		}
		return nil, fmt.Errorf("follow session log %s at %d: %w", f.path, f.off, ErrNotBoundary)
	}
	m.discarded = false
	m.stats = newStats()
	f.m = m
	out, err := f.emit(chunks[i:], t, splitErr)
	if m.header == nil {
		// Not even the header is whole: start again next time.
		f.m, f.off = nil, 0
	}
	return out, err
}

// consume maps what was appended after the offset: b starts at base.
func (f *Follower) consume(b []byte, base int64) ([]events.Envelope, error) {
	chunks, t, splitErr := split(f.path, b, base)
	return f.emit(chunks, t, splitErr)
}

// emit maps chunks in order, moving the offset past each one mapped, and
// records the tail as pending. splitErr, the damage split found after the
// chunks, is returned once they are all mapped (split leaves the tail
// empty then).
func (f *Follower) emit(chunks []chunk, t tail, splitErr error) ([]events.Envelope, error) {
	var out []events.Envelope
	for _, c := range chunks {
		evs, err := f.m.feed(f.path, c, f.zstd)
		out = append(out, evs...)
		if err != nil {
			return out, err
		}
		f.off = c.End
	}
	f.pending = t.Bytes
	return out, splitErr
}
