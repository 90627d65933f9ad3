package replay

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dshmem/events"
	"dshmem/projector"
	"dshmem/sqlstore"
)

// rootBytes reads every file under root except SQLite's shared-memory
// file, whose bytes are a reader's lock state, not content.
func rootBytes(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "-shm") {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameBytes(t *testing.T, got, want map[string]string) {
	t.Helper()
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s was created", p)
		}
	}
	for p, w := range want {
		if g, ok := got[p]; !ok {
			t.Errorf("%s was removed", p)
		} else if g != w {
			t.Errorf("%s was changed", p)
		}
	}
}

// openReadOnly opens root's index and log the way a read command does
// beside the root's writer: the index's cursors first, then the log.
func openReadOnly(t *testing.T, root string) (*events.Log, *sqlstore.Store, map[string]uint64) {
	t.Helper()
	st, err := sqlstore.OpenReadOnly(filepath.Join(root, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	folded, err := st.Cursors()
	if err != nil {
		t.Fatal(err)
	}
	lg, err := events.OpenLogReadOnly(filepath.Join(root, "log"), events.Options{Trusted: folded})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lg.Close() })
	return lg, st, folded
}

// TestVerifyReadOnly: Verify and Restore through a read-only log and
// index, while the writer still has the root open, find the root equal
// to its replay and change no byte of it.
func TestVerifyReadOnly(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	_, writer := liveRoot(t, root, envelopes(scripted()))
	// Nothing left in the writer's WAL for its checkpointer to copy into
	// index.db while the bytes are compared: any change is the readers'.
	if err := writer.CheckpointAll(ctx); err != nil {
		t.Fatal(err)
	}
	lg, st, folded := openReadOnly(t, root)
	before := rootBytes(t, root)
	rep, err := Verify(ctx, lg, root, st, VerifyOptions{Folded: folded})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Differences) != 0 || len(rep.Behind) != 0 || rep.Moved != "" || rep.Files == 0 {
		t.Fatalf("got %v, behind %v, moved %q over %d files; want no differences", rep.Differences, rep.Behind, rep.Moved, rep.Files)
	}
	for path, want := range readTree(t, root) {
		got, err := Restore(ctx, lg, path, Point{}, RestoreOptions{Index: st})
		if err != nil || string(got) != want {
			t.Errorf("restore %s: got %v\n%s\nwant\n%s", path, err, got, want)
		}
	}
	sameBytes(t, rootBytes(t, root), before)
}

// TestVerifyIndexBehind: an index that has not folded the last events of
// a stream (a writer between an append and its fold, or a crash there)
// is compared with the replay of what it folded; the lag is reported in
// Behind, not as a difference. Restore of a day reads what the index has
// not folded from the log.
func TestVerifyIndexBehind(t *testing.T) {
	ctx := context.Background()
	evs := envelopes(scripted())
	root := t.TempDir()
	lg, st := liveRoot(t, root, evs[:len(evs)-2])
	for _, e := range evs[len(evs)-2:] {
		e.Seq = 0
		if _, err := lg.Append(ctx, e.Stream, []events.Envelope{e}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := Verify(ctx, lg, root, st, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	last := lg.LastSeq(wsB)
	if len(rep.Differences) != 0 {
		t.Errorf("got differences %v, want none", rep.Differences)
	}
	if len(rep.Behind) != 1 || rep.Behind[0] != (Lag{Stream: wsB, Folded: last - 2, Logged: last}) {
		t.Errorf("got behind %v, want %s folded to %d of %d", rep.Behind, wsB, last-2, last)
	}
	if rep.Stats.Events != uint64(len(evs)-2) {
		t.Errorf("replayed %d events, want the %d folded", rep.Stats.Events, len(evs)-2)
	}

	day := "sessions/2026-08-18.md"
	whole, err := Restore(ctx, lg, day, Point{}, RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Restore(ctx, lg, day, Point{}, RestoreOptions{Index: st})
	if err != nil || string(got) != string(whole) || !strings.Contains(string(got), "compaction:c-b3") {
		t.Errorf("restore %s with the index behind: got %v\n%s\nwant (with c-b3, which only the log holds)\n%s", day, err, got, whole)
	}
}

// TestVerifyIndexAhead: an index that folded events the log no longer
// holds (cut out by hand) is a difference naming the stream.
func TestVerifyIndexAhead(t *testing.T) {
	ctx := context.Background()
	evs := envelopes(scripted())
	root := t.TempDir()
	_, st := liveRoot(t, root, evs)
	short, err := events.OpenLog(t.TempDir(), events.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	for _, e := range evs[:len(evs)-2] {
		e.Seq = 0
		if _, err := short.Append(ctx, e.Stream, []events.Envelope{e}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := Verify(ctx, short, root, st, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range rep.Differences {
		found = found || d.Path == IndexFile && strings.Contains(d.Problem, "ahead of the log: stream "+wsB)
	}
	if !found {
		t.Errorf("got %v, want index.db ahead of the log in %s", rep.Differences, wsB)
	}
}

// TestVerifyMoved: a writer that folds while Verify runs is named in
// Moved.
func TestVerifyMoved(t *testing.T) {
	ctx := context.Background()
	evs := envelopes(scripted())
	root := t.TempDir()
	lg, st := liveRoot(t, root, evs[:len(evs)-1])
	p := projector.New(st)
	p.Root = root
	written := false
	rep, err := Verify(ctx, lg, root, st, VerifyOptions{Options: Options{Progress: func(string, uint64, uint64, uint64) {
		if !written {
			written = true
			appendAndFold(t, lg, p, evs[len(evs)-1])
		}
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Moved, "stream "+wsB) || len(rep.Differences) == 0 {
		t.Errorf("got moved %q, differences %v; want %s named and the new row a difference", rep.Moved, rep.Differences, wsB)
	}
}

// TestVerifyNoIndex: a root without an index is compared with the
// replay of its whole log; the index is the one difference.
func TestVerifyNoIndex(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	lg, _ := liveRoot(t, root, envelopes(scripted()))
	rep, err := Verify(ctx, lg, root, nil, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Differences) != 1 || rep.Differences[0].Path != IndexFile || !strings.Contains(rep.Differences[0].Problem, "missing") {
		t.Errorf("got %v, want only index.db missing", rep.Differences)
	}
}
