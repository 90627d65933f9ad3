package dsh

import (
	"fmt"
	"sort"
	"strings"
)

// Stats counts what reading produced and what it left out.
type Stats struct {
	Files    int // session files read
	Sessions int // sessions (headers) read
	Events   int // envelopes produced
	Lines    int // host lines decoded, header included
	Frames   int // zstd frames verified (0 for JSONL)

	Skipped   map[string]int // host types that carry nothing to remember, by type
	Unknown   map[string]int // unknown host types without "ignorable":true
	Malformed map[string]int // mapped types whose row did not have the expected shape

	TornBytes int64 // bytes after the last whole frame or line, left unread
}

func newStats() Stats {
	return Stats{Skipped: map[string]int{}, Unknown: map[string]int{}, Malformed: map[string]int{}}
}

// Add adds o's counts to s.
func (s *Stats) Add(o Stats) {
	s.Files += o.Files
	s.Sessions += o.Sessions
	s.Events += o.Events
	s.Lines += o.Lines
	s.Frames += o.Frames
	s.TornBytes += o.TornBytes
	addMap(&s.Skipped, o.Skipped)
	addMap(&s.Unknown, o.Unknown)
	addMap(&s.Malformed, o.Malformed)
}

// addMap adds src's counts to *dst, making *dst when it is nil (a zero
// Stats can be added to).
func addMap(dst *map[string]int, src map[string]int) {
	if *dst == nil {
		*dst = make(map[string]int, len(src))
	}
	for k, v := range src {
		(*dst)[k] += v
	}
}

// Total sums the stats of sessions.
func Total(sessions []Session) Stats {
	t := newStats()
	for i := range sessions {
		t.Add(sessions[i].Stats)
	}
	return t
}

// String is a one-line summary with keys in sorted order, so that equal
// stats print equally.
func (s Stats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "files=%d sessions=%d events=%d lines=%d frames=%d torn=%dB",
		s.Files, s.Sessions, s.Events, s.Lines, s.Frames, s.TornBytes)
	for _, m := range []struct {
		name string
		m    map[string]int
	}{{"skipped", s.Skipped}, {"unknown", s.Unknown}, {"malformed", s.Malformed}} {
		fmt.Fprintf(&b, " %s{%s}", m.name, formatCounts(m.m))
	}
	return b.String()
}

func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}
