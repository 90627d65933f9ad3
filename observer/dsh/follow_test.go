package dsh

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"dshmem/events"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// appendFile appends b to path, as the host does.
func appendFile(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	require.NoError(t, err)
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	require.NoError(t, f.Close())
}

func poll(t *testing.T, f *Follower) []events.Envelope {
	t.Helper()
	evs, err := f.Poll()
	require.NoError(t, err, "Poll at %d", f.Offset())
	return evs
}

// TestFollow writes a host log frame by frame (and a JSONL log line by
// line), leaving each unit half-written across a poll, and checks that every
// event arrives exactly once, also across a restart from a saved offset.
func TestFollow(t *testing.T) {
	lines := fixtureLines(t, filepath.Join(fixtureDir, "goal-multi-turn-actions--session.jsonl"))
	for _, format := range []string{"zstd", "jsonl"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			var units [][]byte // what the host appends, one durable write each
			var name string
			if format == "zstd" {
				_, b := writeZstdFile(t, dir, "ref--session.jsonl.zstd", lines, 6)
				starts := frameStarts(t, b)
				for i := 0; i+1 < len(starts); i++ {
					units = append(units, b[starts[i]:starts[i+1]])
				}
				name = "live--session.jsonl.zstd"
			} else {
				for _, l := range lines {
					units = append(units, append(bytes.Clone(l), '\n'))
				}
				name = "live--session.jsonl"
			}
			full, err := decodeSession(name, bytes.Join(units, nil))
			require.NoError(t, err)
			path := filepath.Join(dir, name)

			f := NewFollower(path, 0)
			if evs, err := f.Poll(); err == nil || len(evs) != 0 {
				// The file does not exist yet.
				t.Fatalf("Poll before the file exists: got %d events, err %v; want an error", len(evs), err)
			}
			var got []events.Envelope
			var saved int64
			var savedCount int
			for i, u := range units {
				half := len(u) / 2
				appendFile(t, path, u[:half])
				evs := poll(t, f)
				require.Len(t, evs, 0, "unit %d half-written: got %d events, want none", i, len(evs))
				require.Equal(t, int64(half), f.Pending(), "unit %d: pending %d, want %d", i, f.Pending(), half)
				appendFile(t, path, u[half:])
				got = append(got, poll(t, f)...)
				got = append(got, poll(t, f)...) // nothing new: nothing twice
				if i == len(units)/2 {
					saved, savedCount = f.Offset(), len(got)
				}
			}
			sameEnvelopes(t, got, full.Events)
			assert.False(t, f.Offset() != full.End || f.Pending() != 0, "offset %d pending %d, want %d 0", f.Offset(), f.Pending(), full.End)

			// Restart from the saved offset: exactly the rest, nothing twice.
			r := NewFollower(path, saved)
			rest := poll(t, r)
			sameEnvelopes(t, append(got[:savedCount:savedCount], rest...), full.Events)
			assert.Len(t, poll(t, r), 0, "second poll after resume returned events")
		})
	}
}

// TestFollowResumeEveryBoundary resumes at every frame boundary of the
// real host log.
func TestFollowResumeEveryBoundary(t *testing.T) {
	b, full := liveSession(t)
	dir := t.TempDir()
	path := writeRaw(t, dir, "l--session.jsonl.zstd", b)
	starts := frameStarts(t, b)
	// Events produced before each boundary, from a follower that never stops.
	f := NewFollower(path, 0)
	before := map[int64]int{}
	n := 0
	for _, end := range starts[1:] {
		writeRaw(t, dir, filepath.Base(path), b[:end])
		n += len(poll(t, f))
		before[end] = n
	}
	require.Equal(t, len(full.Events), n, "follower from 0: got %d events, want %d", n, len(full.Events))
	for _, off := range starts[1:] {
		r := NewFollower(path, off)
		rest := poll(t, r)
		sameEnvelopes(t, rest, full.Events[before[off]:])
	}
	t.Run("ErrNotBoundary", func(t *testing.T) {
		_, err := NewFollower(path, starts[2]+3).Poll()
		require.ErrorIs(t, err, ErrNotBoundary, "got %v, want ErrNotBoundary", err)
	})
	t.Run("ErrShrunk", func(t *testing.T) {
		g := NewFollower(path, 0)
		poll(t, g)
		require.NoError(t, os.Truncate(path, starts[3]))
		_, err := g.Poll()
		require.ErrorIs(t, err, ErrShrunk, "got %v, want ErrShrunk", err)
	})
	t.Run("CorruptError", func(t *testing.T) {
		bad := bytes.Clone(b)
		bad[starts[4]+10] ^= 0xff
		p := writeRaw(t, dir, "bad--session.jsonl.zstd", bad[:starts[4]])
		g := NewFollower(p, 0)
		poll(t, g)
		appendFile(t, p, bad[starts[4]:])
		evs, err := g.Poll()
		var ce *CorruptError
		require.True(t, errors.As(err, &ce), "got %d events, offset %d, err %v; want *CorruptError at %d", len(evs), g.Offset(), err, starts[4])
		require.Equal(t, starts[4], ce.Offset, "got %d events, offset %d, err %v; want *CorruptError at %d", len(evs), g.Offset(), err, starts[4])
		require.Len(t, evs, 0, "got %d events, offset %d, err %v; want *CorruptError at %d", len(evs), g.Offset(), err, starts[4])
		require.Equal(t, starts[4], g.Offset(), "got %d events, offset %d, err %v; want *CorruptError at %d", len(evs), g.Offset(), err, starts[4])
	})
}

// TestFollowerStatsAndHeader: before the header is whole a Follower has no
// header and counts nothing; resumed at a saved offset it knows the header
// and counts only what it produced after the offset.
func TestFollowerStatsAndHeader(t *testing.T) {
	b, full := liveSession(t)
	dir := t.TempDir()
	starts := frameStarts(t, b)
	path := writeRaw(t, dir, "l--session.jsonl.zstd", b[:starts[1]-1]) // the header frame, torn

	f := NewFollower(path, 0)
	if evs := poll(t, f); len(evs) != 0 || f.Header() != nil || f.Stats().Events != 0 || f.Stats().TornBytes != starts[1]-1 {
		t.Fatalf("torn header: got %d events, header %v, stats %v", len(evs), f.Header(), f.Stats())
	}
	writeRaw(t, dir, filepath.Base(path), b)
	evs := poll(t, f)
	h := f.Header()
	require.NotNil(t, h, "whole log: got header %v, stats %v, %d events; want %s and %d", h, f.Stats(), len(evs), full.ID, len(full.Events))
	require.Equal(t, full.ID, h.ID, "whole log: got header %v, stats %v, %d events; want %s and %d", h, f.Stats(), len(evs), full.ID, len(full.Events))
	require.Equal(t, len(evs), f.Stats().Events, "whole log: got header %v, stats %v, %d events; want %s and %d", h, f.Stats(), len(evs), full.ID, len(full.Events))
	require.Len(t, evs, len(full.Events), "whole log: got header %v, stats %v, %d events; want %s and %d", h, f.Stats(), len(evs), full.ID, len(full.Events))

	r := NewFollower(path, starts[3])
	rest := poll(t, r)
	st := r.Stats()
	if h := r.Header(); h == nil || h.ID != full.ID {
		t.Fatalf("resumed: got header %v, want %s", h, full.ID)
	}
	assert.False(t, st.Events != len(rest) || st.Frames != len(starts)-1-3 || st.TornBytes != 0, "resumed at frame 3: got %v, want %d events and %d frames", st, len(rest), len(starts)-1-3)
}

// liveSession reads the real host log and decodes it whole.
func liveSession(t *testing.T) ([]byte, Session) {
	t.Helper()
	b, err := os.ReadFile(livePath)
	require.NoError(t, err)
	s, err := decodeSession("x.jsonl.zstd", b)
	require.NoError(t, err)
	return b, s
}
