package dsh

import (
	"fmt"
	"os"
	"strings"

	"dshmem/events"
)

// Session is one host session log, read and mapped.
type Session struct {
	Path   string
	ID     string // header id
	Cwd    string // header cwd
	Header Header
	Events []events.Envelope
	Stats  Stats

	// End is the offset just after the last whole frame or line; a Follower
	// started at End continues where this read stopped.
	End int64
	// TornBytes are the bytes after End that were left unread because they
	// do not (yet) form a whole, verified frame or line; TailReason says why.
	TornBytes  int64
	TailReason string
}

// isZstd reports whether path names a zstd-framed log.
func isZstd(path string) bool {
	return strings.HasSuffix(path, ".zstd") || strings.HasSuffix(path, ".zst")
}

// split cuts b, which starts at file offset base, into whole chunks.
func split(path string, b []byte, base int64) ([]chunk, tail, error) {
	if isZstd(path) {
		return splitZstd(path, b, base)
	}
	return splitJSONL(path, b, base)
}

// feed maps the lines of c. Line errors inside a verified chunk are
// corruption at the chunk's offset.
func (m *mapper) feed(path string, c chunk, zstd bool) ([]events.Envelope, error) {
	if zstd {
		m.stats.Frames++
	}
	var out []events.Envelope
	for i, line := range c.Lines {
		evs, err := m.line(line)
		if err != nil {
			if m.header == nil { // the header line itself: not a session log
				return out, fmt.Errorf("read session log %s: %w", path, err)
			}
			return out, &CorruptError{Path: path, Offset: c.Off, Err: fmt.Errorf("line %d of chunk: %w", i+1, err)}
		}
		if !m.discarded {
			out = append(out, evs...)
		}
	}
	return out, nil
}

// ReadFile reads one session log (.jsonl or .jsonl.zstd) and maps it. A torn
// tail is not an error: the whole frames are returned and TornBytes says how
// much was left. Damage followed by valid data is a *CorruptError.
func ReadFile(path string) (Session, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Session{}, fmt.Errorf("read session log %s: %w", path, err)
	}
	return decodeSession(path, b)
}

func decodeSession(path string, b []byte) (Session, error) {
	chunks, t, err := split(path, b, 0)
	if err != nil {
		return Session{}, err
	}
	m := newMapper()
	s := Session{Path: path, TornBytes: t.Bytes, TailReason: t.Reason}
	for _, c := range chunks {
		evs, err := m.feed(path, c, isZstd(path))
		if err != nil {
			return Session{}, err
		}
		s.Events = append(s.Events, evs...)
		s.End = c.End
	}
	if m.header == nil {
		return Session{}, fmt.Errorf("read session log %s: %w", path, ErrNoHeader)
	}
	s.Header, s.ID, s.Cwd = *m.header, m.header.ID, m.header.Cwd
	s.Stats = m.stats
	s.Stats.Files, s.Stats.Sessions, s.Stats.TornBytes = 1, 1, t.Bytes
	return s, nil
}
