package projector

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dshmem/events"
	"dshmem/sqlstore"
)

// TestHistoryOnTextChange: summary_history/ gets a version when a memory
// event changes the summary's text, not on every memory event, and the
// versions kept do not depend on how the log was split into folds.
func TestHistoryOnTextChange(t *testing.T) {
	const ws = "ws-cccccccccccccccccccc"
	rem := func(seq uint64, content string) events.Envelope {
		return ev(ws, seq, events.TypeMemoryRemember, "", map[string]any{"content": content, "type": "fact"})
	}
	noop := func(seq uint64) events.Envelope { // forgets an entry that does not exist: changes nothing
		return ev(ws, seq, events.TypeMemoryForget, "", map[string]any{"entryId": "m-0000000000000000"})
	}
	evs := []events.Envelope{rem(1, "first"), noop(2), rem(3, "second"), noop(4), noop(5), rem(6, "third")}
	want := []string{HistoryPath(ws, 1), HistoryPath(ws, 3), HistoryPath(ws, 6)}
	for _, split := range []int{1, 2, len(evs)} {
		root := t.TempDir()
		p := New(openStore(t))
		p.Root = root
		for i := 0; i < len(evs); i += split {
			mustFold(t, p, evs[i:min(i+split, len(evs))])
		}
		got, _ := filepath.Glob(filepath.Join(root, ScopesDir, ws, HistoryDir, "*.md"))
		if len(got) != len(want) {
			t.Fatalf("split %d: got versions %v, want %v", split, got, want)
		}
		for i, g := range got {
			if rel, _ := filepath.Rel(root, g); filepath.ToSlash(rel) != want[i] {
				t.Errorf("split %d: got version %s, want %s", split, rel, want[i])
			}
		}
		last, _ := os.ReadFile(got[len(got)-1])
		r, ok, err := p.Render(context.Background(), SummaryPath(ws))
		if err != nil || !ok || string(r.Data) != string(last) {
			t.Errorf("split %d: the newest version differs from the summary (%v)", split, err)
		}
	}
}

// TestUnrecordedFileRemoved: a history file a write put in place but
// failed to record (its files_intent row is all that says it is ours) is
// removed once it is no longer kept, not left behind for ever.
func TestUnrecordedFileRemoved(t *testing.T) {
	const ws = "ws-dddddddddddddddddddd"
	ctx := context.Background()
	root := t.TempDir()
	p := New(openStore(t))
	p.Root = root
	var evs []events.Envelope
	for seq := uint64(1); seq <= 12; seq++ {
		evs = append(evs, ev(ws, seq, events.TypeMemoryRemember, "", map[string]any{"content": fmt.Sprintf("fact %d", seq), "type": "fact"}))
	}
	mustFold(t, p, evs)
	orphan := HistoryPath(ws, 1) // older than the 10 kept (3..12)
	data := []byte("a version written, never recorded\n")
	abs := filepath.Join(root, filepath.FromSlash(orphan))
	if err := os.WriteFile(abs, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.s.RecordFileIntents(ctx, []sqlstore.FileIntent{{Path: orphan, SHA256: SHA256(data)}}); err != nil {
		t.Fatal(err)
	}
	if err := p.enqueue(ctx, []string{groupScope + ws}); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteQueued(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); !os.IsNotExist(err) {
		t.Errorf("%s: got %v, want it removed", orphan, err)
	}
	left, err := p.s.FileIntents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(left); n != 0 {
		t.Errorf("got %d files_intent rows left, want 0", n)
	}
}

// TestHistorySplitIndependent: which summary versions exist, and their
// bytes, do not depend on how the log is split into folds, with remembers
// that add nothing, forgets that change the count or nothing, and more
// than HistoryKeep versions in one fold (whose older ones are never
// rendered).
func TestHistorySplitIndependent(t *testing.T) {
	const ws = "ws-eeeeeeeeeeeeeeeeeeee"
	var evs []events.Envelope
	seq := uint64(0)
	add := func(typ string, data map[string]any) {
		seq++
		evs = append(evs, ev(ws, seq, typ, "", data))
	}
	for i := 0; i < 40; i++ {
		switch {
		case i%7 == 3:
			add(events.TypeMemoryRemember, map[string]any{"content": "  "}) // adds nothing
		case i == 20:
			add(events.TypeMemoryForget, map[string]any{"entryId": EntryID(ws, 2, 0)}) // count −1
		case i == 21:
			add(events.TypeMemoryForget, map[string]any{"entryId": EntryID(ws, 2, 0)}) // already forgotten
		default:
			add(events.TypeMemoryRemember, map[string]any{"content": fmt.Sprintf("fact %d", i), "type": "fact", "importance": i % 4})
		}
	}
	var want string
	for _, split := range []int{1, 3, 11, len(evs)} {
		root := t.TempDir()
		s := openStore(t)
		p := New(s)
		p.Root = root
		for i := 0; i < len(evs); i += split {
			mustFold(t, p, evs[i:min(i+split, len(evs))])
		}
		var b bytes.Buffer
		if err := DumpFiles(context.Background(), s, &b); err != nil {
			t.Fatal(err)
		}
		if want == "" {
			want = b.String()
			continue
		}
		if b.String() != want {
			t.Errorf("split %d: the files and summary versions differ from the one-event folds", split)
		}
	}
	if n := strings.Count(want, "summary_versions\t"); n != HistoryKeep {
		t.Errorf("got %d summary versions, want %d", n, HistoryKeep)
	}
}
