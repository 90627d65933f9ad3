package scrub

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/markdown"
	"dshmem/observer"
	"dshmem/projector"
)

// Marker is what scrubbed text becomes. Part of the on-disk format (it
// is written into events); do not change.
const Marker = payload.ScrubbedText

// MinNeedleRunes is the shortest text of a forgotten entry that is
// replaced wherever it appears in its stream. A shorter one ("Go",
// "tabs") cannot be told apart from ordinary words, so it is replaced
// only in the entry's own events, where it is known to be the entry's.
const MinNeedleRunes = 6

// JournalFile is the scrub's journal, in the root: the plan of a scrub
// that has started rewriting. It is written (and fsynced) before the
// first segment is touched and removed after the index and the files
// are rebuilt, so a scrub a crash interrupted is finished by the next
// one with the same plan (the index it plans from may have lost the
// texts already scrubbed from the log).
const JournalFile = "scrub-journal.json"

// plan is what a scrub removes: per stream, the texts of its forgotten
// entries, the events that wrote them, and (with sources) the events
// they were learnt from. It is also the journal's content.
type plan struct {
	V       int                    `json:"v"`
	Sources bool                   `json:"sources"`
	Streams map[string]*streamPlan `json:"streams"`
	Entries []string               `json:"entries"` // forgotten entry ids, sorted
	// Files are the sha256s of the projection files as dshmem had
	// written them, recorded just before the rebuilt index replaces the
	// live one: after a crash between that and the files being
	// replaced, these bytes are still dshmem's, not a hand edit.
	Files map[string][]string `json:"files,omitempty"`
	seen  map[string]map[string]bool
	ids   map[string]bool // Entries as a set
}

// streamPlan is the part of a plan for one stream.
type streamPlan struct {
	// Needles are texts replaced by Marker wherever they appear in a
	// text field of one of the stream's events, longest first.
	Needles []string `json:"needles"`
	// Own lists the events that wrote a forgotten entry's versions:
	// their text fields for that entry become Marker whatever their
	// length (seq → what of the event).
	Own map[uint64]*own `json:"own"`
	// SourceIDs are the ids of the events the entries were learnt from
	// (with Sources): their text becomes Marker whole.
	SourceIDs []string `json:"sourceIds,omitempty"`

	replacer   *strings.Replacer
	escaped    [][]byte
	sources    map[string]bool
	sourcePats [][]byte // `"id":"<id>"` of each source id
}

// own says which text of one event belongs to a forgotten entry: all of
// it (All: a memory/remember), or some of its ops (Ops: a memory/ops;
// which ones is decided when the event is read, by entryOp).
type own struct {
	All bool `json:"all,omitempty"`
	Ops bool `json:"ops,omitempty"`
}

func newPlan(sources bool) *plan {
	return &plan{V: 1, Sources: sources, Streams: map[string]*streamPlan{}, seen: map[string]map[string]bool{}}
}

func (p *plan) stream(name string) *streamPlan {
	sp := p.Streams[name]
	if sp == nil {
		sp = &streamPlan{Own: map[uint64]*own{}}
		p.Streams[name] = sp
	}
	return sp
}

// addFile records sums as bytes dshmem wrote at path.
func (p *plan) addFile(path string, sums ...string) {
	if p.Files == nil {
		p.Files = map[string][]string{}
	}
	p.Files[path] = appendNew(p.Files[path], sums...)
}

// empty reports whether the plan removes nothing.
func (p *plan) empty() bool { return len(p.Streams) == 0 }

// addNeedle adds text (and, for a text of several lines, each line) to
// the needles of stream, if it is long enough to be told apart.
func (p *plan) addNeedle(stream, text string) {
	add := func(s string) {
		s = strings.TrimSpace(s)
		if utf8.RuneCountInString(s) < MinNeedleRunes || s == Marker || strings.Contains(s, Marker) {
			return
		}
		if p.seen[stream] == nil {
			p.seen[stream] = map[string]bool{}
		}
		if !p.seen[stream][s] {
			p.seen[stream][s] = true
			sp := p.stream(stream)
			sp.Needles = append(sp.Needles, s)
		}
	}
	add(text)
	if strings.Contains(text, "\n") {
		for l := range strings.Lines(text) {
			add(l)
		}
	}
}

// addEntry adds a forgotten entry and its versions to the plan.
func (p *plan) addEntry(en observer.Entry, vs []observer.EntryVersion) {
	p.Entries = append(p.Entries, en.ID)
	for _, v := range vs {
		for _, s := range []string{v.Title, v.Description, v.Content, v.Terms} {
			p.addNeedle(en.Scope, s)
		}
		if v.Stream != en.Scope {
			continue // ops never reach across streams; nothing of this event is the entry's
		}
		sp := p.stream(v.Stream)
		o := sp.Own[v.Seq]
		if o == nil {
			o = &own{}
			sp.Own[v.Seq] = o
		}
		switch v.EventType {
		case events.TypeMemoryRemember:
			o.All = true
		case events.TypeMemoryOps:
			o.Ops = true
		}
	}
	if p.Sources {
		var prov struct {
			EventIDs []string `json:"eventIds"`
		}
		if json.Unmarshal(en.Provenance, &prov) == nil {
			sp := p.stream(en.Scope)
			for _, id := range prov.EventIDs {
				sp.SourceIDs = appendNew(sp.SourceIDs, id)
			}
		}
	}
}

// merge adds what an earlier, interrupted scrub planned (its journal).
func (p *plan) merge(old *plan) {
	p.Sources = p.Sources || old.Sources
	for path, sums := range old.Files {
		p.addFile(path, sums...)
	}
	for _, id := range old.Entries {
		if !slices.Contains(p.Entries, id) {
			p.Entries = append(p.Entries, id)
		}
	}
	for name, osp := range old.Streams {
		sp := p.stream(name)
		for _, n := range osp.Needles {
			if p.seen[name] == nil {
				p.seen[name] = map[string]bool{}
			}
			if !p.seen[name][n] {
				p.seen[name][n] = true
				sp.Needles = append(sp.Needles, n)
			}
		}
		for seq, o := range osp.Own {
			cur := sp.Own[seq]
			if cur == nil {
				sp.Own[seq] = o
				continue
			}
			cur.All = cur.All || o.All
			cur.Ops = cur.Ops || o.Ops
		}
		for _, id := range osp.SourceIDs {
			sp.SourceIDs = appendNew(sp.SourceIDs, id)
		}
	}
}

// finish sorts the plan (so the journal and the replacements are
// deterministic) and builds each stream's replacer: needles longest
// first, so a text is replaced whole before a line of it is.
func (p *plan) finish() {
	sort.Strings(p.Entries)
	p.ids = map[string]bool{}
	for _, id := range p.Entries {
		p.ids[id] = true
	}
	for _, sp := range p.Streams {
		sort.Slice(sp.Needles, func(i, j int) bool {
			a, b := sp.Needles[i], sp.Needles[j]
			if len(a) != len(b) {
				return len(a) > len(b)
			}
			return a < b
		})
		sort.Strings(sp.SourceIDs)
		var pairs []string
		sp.escaped = sp.escaped[:0]
		for _, n := range sp.Needles {
			pairs = append(pairs, n, Marker)
			q, _ := json.Marshal(n)
			sp.escaped = append(sp.escaped, unescapeHTML(q[1:len(q)-1]))
		}
		sp.replacer = strings.NewReplacer(pairs...)
		sp.sources = map[string]bool{}
		sp.sourcePats = nil
		for _, id := range sp.SourceIDs {
			sp.sources[id] = true
			q, _ := json.Marshal(id)
			sp.sourcePats = append(sp.sourcePats, append([]byte(`"id":`), unescapeHTML(q)...))
		}
	}
}

// unescapeHTML undoes json.Marshal's HTML escaping: the log's lines are
// written without it.
func unescapeHTML(b []byte) []byte {
	b = bytes.ReplaceAll(b, []byte(`\u003c`), []byte("<"))
	b = bytes.ReplaceAll(b, []byte(`\u003e`), []byte(">"))
	b = bytes.ReplaceAll(b, []byte(`\u0026`), []byte("&"))
	return b
}

// buildPlan reads the forgotten entries from the index.
func buildPlan(ctx context.Context, eng *observer.Engine, sources bool) (*plan, error) {
	p := newPlan(sources)
	ens, err := eng.Entries(ctx, observer.EntryFilter{Statuses: []string{payload.StatusForgotten}})
	if err != nil {
		return nil, fmt.Errorf("list forgotten entries: %w", err)
	}
	for _, en := range ens {
		vs, err := eng.History(ctx, en.ID)
		if err != nil {
			return nil, fmt.Errorf("read the history of %s: %w", en.ID, err)
		}
		p.addEntry(en, vs)
	}
	return p, nil
}

// readJournal reads the journal an interrupted scrub left, or nil.
func readJournal(root string) (*plan, error) {
	b, err := os.ReadFile(filepath.Join(root, JournalFile))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the journal of an interrupted scrub: %w", err)
	}
	p := newPlan(false)
	if err := json.Unmarshal(b, p); err != nil || p.V != 1 {
		return nil, fmt.Errorf("the journal of an interrupted scrub, %s, does not decode (%v): move it aside and run the scrub again", filepath.Join(root, JournalFile), err)
	}
	if p.Streams == nil {
		p.Streams = map[string]*streamPlan{}
	}
	for name, sp := range p.Streams {
		if sp.Own == nil {
			sp.Own = map[uint64]*own{}
		}
		p.seen[name] = map[string]bool{}
		for _, n := range sp.Needles {
			p.seen[name][n] = true
		}
	}
	return p, nil
}

// writeJournal writes the plan atomically (temp file, fsync, rename,
// fsync dir).
func writeJournal(root string, p *plan) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := markdown.WriteFileAtomic(filepath.Join(root, JournalFile), b, 0o600); err != nil {
		return fmt.Errorf("write the scrub journal: %w", err)
	}
	return nil
}

// removeJournal removes the journal and makes that durable.
func removeJournal(root string) error {
	if err := os.Remove(filepath.Join(root, JournalFile)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove the scrub journal: %w", err)
	}
	if err := markdown.SyncDir(root); err != nil {
		return fmt.Errorf("sync %s: %w", root, err)
	}
	return nil
}

// entryOp reports whether op i of the memory/ops event at (stream, seq)
// made one of ids, or targets one with a revise (whole) or with a
// supersede or conflict that quotes it (quote).
func entryOp(stream string, seq uint64, i int, o payload.Op, ids map[string]bool) (whole, quote bool) {
	if ids[projector.EntryID(stream, seq, i)] {
		return true, false
	}
	if !ids[o.TargetID] {
		return false, false
	}
	switch strings.ToLower(strings.TrimSpace(o.Op)) {
	case payload.OpRevise:
		return true, false
	case payload.OpSupersede, payload.OpConflict:
		return false, true
	}
	return false, false
}

// liveOp reports whether op i of the memory/ops event at (stream, seq)
// makes or revises an entry that is not forgotten: its entry fields are
// that entry's text, left as they are.
func liveOp(stream string, seq uint64, i int, o payload.Op, ids map[string]bool) bool {
	switch strings.ToLower(strings.TrimSpace(o.Op)) {
	case payload.OpAdd, payload.OpSupersede, payload.OpConflict:
		return !ids[projector.EntryID(stream, seq, i)]
	case payload.OpRevise:
		return o.TargetID != "" && !ids[o.TargetID]
	}
	return false
}

func appendNew[T comparable](list []T, add ...T) []T {
	for _, x := range add {
		if !slices.Contains(list, x) {
			list = append(list, x)
		}
	}
	return list
}
