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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	require.NoError(t, err)
	return out
}

func sameBytes(t *testing.T, got, want map[string]string) {
	t.Helper()
	for p := range got {
		_, ok := want[p]
		assert.True(t, ok, "%s was created", p)
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
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	folded, err := st.Cursors()
	require.NoError(t, err)
	lg, err := events.OpenLogReadOnly(filepath.Join(root, "log"), events.Options{Trusted: folded})
	require.NoError(t, err)
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
	require.NoError(t, writer.CheckpointAll(ctx))
	lg, st, folded := openReadOnly(t, root)
	before := rootBytes(t, root)
	rep, err := Verify(ctx, lg, root, st, VerifyOptions{Folded: folded})
	require.NoError(t, err)
	require.Len(t, rep.Differences, 0, "got %v, behind %v, moved %q over %d files; want no differences", rep.Differences, rep.Behind, rep.Moved, rep.Files)
	require.Len(t, rep.Behind, 0, "got %v, behind %v, moved %q over %d files; want no differences", rep.Differences, rep.Behind, rep.Moved, rep.Files)
	require.EqualValues(t, "", rep.Moved, "got %v, behind %v, moved %q over %d files; want no differences", rep.Differences, rep.Behind, rep.Moved, rep.Files)
	require.NotEqualValues(t, 0, rep.Files, "got %v, behind %v, moved %q over %d files; want no differences", rep.Differences, rep.Behind, rep.Moved, rep.Files)
	for path, want := range readTree(t, root) {
		got, err := Restore(ctx, lg, path, Point{}, RestoreOptions{Index: st})
		assert.False(t, err != nil || string(got) != want, "restore %s: got %v\n%s\nwant\n%s", path, err, got, want)
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
		_, err := lg.Append(ctx, e.Stream, []events.Envelope{e})
		require.NoError(t, err)
	}
	rep, err := Verify(ctx, lg, root, st, VerifyOptions{})
	require.NoError(t, err)
	last := lg.LastSeq(wsB)
	assert.Len(t, rep.Differences, 0, "got differences %v, want none", rep.Differences)
	assert.False(t, len(rep.Behind) != 1 || rep.Behind[0] != (Lag{Stream: wsB, Folded: last - 2, Logged: last}), "got behind %v, want %s folded to %d of %d", rep.Behind, wsB, last-2, last)
	assert.Equal(t, uint64(len(evs)-2), rep.Stats.Events, "replayed %d events, want the %d folded", rep.Stats.Events, len(evs)-2)

	day := "sessions/2026-08-18.md"
	whole, err := Restore(ctx, lg, day, Point{}, RestoreOptions{})
	require.NoError(t, err)
	got, err := Restore(ctx, lg, day, Point{}, RestoreOptions{Index: st})
	assert.False(t, err != nil || string(got) != string(whole) || !strings.Contains(string(got), "compaction:c-b3"), "restore %s with the index behind: got %v\n%s\nwant (with c-b3, which only the log holds)\n%s", day, err, got, whole)
}

// TestVerifyIndexAhead: an index that folded events the log no longer
// holds (cut out by hand) is a difference naming the stream.
func TestVerifyIndexAhead(t *testing.T) {
	ctx := context.Background()
	evs := envelopes(scripted())
	root := t.TempDir()
	_, st := liveRoot(t, root, evs)
	short, err := events.OpenLog(t.TempDir(), events.Options{})
	require.NoError(t, err)
	defer short.Close()
	for _, e := range evs[:len(evs)-2] {
		e.Seq = 0
		_, err := short.Append(ctx, e.Stream, []events.Envelope{e})
		require.NoError(t, err)
	}
	rep, err := Verify(ctx, short, root, st, VerifyOptions{})
	require.NoError(t, err)
	found := false
	for _, d := range rep.Differences {
		found = found || d.Path == IndexFile && strings.Contains(d.Problem, "ahead of the log: stream "+wsB)
	}
	assert.True(t, found, "got %v, want index.db ahead of the log in %s", rep.Differences, wsB)
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
	require.NoError(t, err)
	assert.False(t, !strings.Contains(rep.Moved, "stream "+wsB) || len(rep.Differences) == 0, "got moved %q, differences %v; want %s named and the new row a difference", rep.Moved, rep.Differences, wsB)
}

// TestVerifyNoIndex: a root without an index is compared with the
// replay of its whole log; the index is the one difference.
func TestVerifyNoIndex(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	lg, _ := liveRoot(t, root, envelopes(scripted()))
	rep, err := Verify(ctx, lg, root, nil, VerifyOptions{})
	require.NoError(t, err)
	assert.False(t, len(rep.Differences) != 1 || rep.Differences[0].Path != IndexFile || !strings.Contains(rep.Differences[0].Problem, "missing"), "got %v, want only index.db missing", rep.Differences)
}
