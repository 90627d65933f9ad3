package events

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// secretEvent is a user message holding token.
func secretEvent(i int, token string) Envelope {
	e := testEvent(i)
	e.Type = TypeUserMessage
	e.Data, _ = json.Marshal(map[string]any{"text": "remember " + token + " please"})
	return e
}

// scrubToken replaces token in a line's data with [scrubbed].
func scrubToken(token string) LineRewriter {
	return func(seq uint64, line []byte) ([]byte, bool, error) {
		if !bytes.Contains(line, []byte(token)) {
			return line, false, nil
		}
		e, err := Unmarshal(line)
		if err != nil {
			return nil, false, err
		}
		e.Data = bytes.ReplaceAll(e.Data, []byte(token), []byte("[scrubbed]"))
		out, err := Marshal(&e)
		return out, true, err
	}
}

// rewriteLog writes three segments' worth of events with a token in
// some of them (the last segment active), and returns the log and all
// the events as appended.
func rewriteLog(t *testing.T, dir string, opts Options, token string) (*Log, []Envelope) {
	t.Helper()
	l := openLog(t, dir, opts)
	var all []Envelope
	for i := 0; i < 12; i++ {
		evs := testEvents(i*3, 3)
		if i%4 == 3 {
			evs[1] = secretEvent(i*3+1, token)
		}
		all = append(all, mustAppend(t, l, "global", evs)...)
	}
	// The last one alone, in the active segment.
	all = append(all, mustAppend(t, l, "global", []Envelope{secretEvent(1000, token)})...)
	require.Greater(t, len(segmentPaths(t, dir, "global")), 2, "want several segments")
	return l, all
}

func grepDir(t *testing.T, dir, token string) []string {
	t.Helper()
	var hits []string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			b, _ := os.ReadFile(p)
			if bytes.Contains(b, []byte(token)) {
				hits = append(hits, p)
			}
		}
		return nil
	})
	return hits
}

func TestRewrite(t *testing.T) {
	const token = "TOKEN-4f1c"
	dir := t.TempDir()
	l, all := rewriteLog(t, dir, Options{SegmentSize: 1500, MaxBatch: 2}, token)
	lastBefore := l.LastSeq("global")

	dry, err := l.Rewrite(context.Background(), "global", scrubToken(token), RewriteOptions{DryRun: true})
	require.NoError(t, err)
	require.Equal(t, 4, dry.Events, "dry run: got %d events to change, want 4", dry.Events)
	require.NotEmpty(t, grepDir(t, dir, "please"), "a dry run changes nothing")

	var steps []string
	rep, err := l.Rewrite(context.Background(), "global", scrubToken(token), RewriteOptions{
		Step: func(step, seg string) { steps = append(steps, step) },
	})
	require.NoError(t, err)
	require.Equal(t, 4, rep.Events, "got %d events changed, want 4", rep.Events)
	require.True(t, rep.Sealed, "the active segment held a token: it must have been sealed")
	require.Contains(t, steps, "renamed")

	// Appends go on into a new segment; reads see every event, changed
	// only in the data of the three.
	more := mustAppend(t, l, "global", testEvents(100, 2))
	require.Equal(t, lastBefore+1, more[0].Seq)
	got := scanAll(t, l, "global", 1)
	require.Len(t, got, len(all)+2)
	for i, e := range got[:len(all)] {
		w := all[i]
		require.Equal(t, w.ID, e.ID)
		require.Equal(t, w.Seq, e.Seq)
		if strings.Contains(string(w.Data), token) {
			require.Contains(t, string(e.Data), "[scrubbed]")
		} else {
			require.Equal(t, string(w.Data), string(e.Data), "seq %d changed", e.Seq)
		}
	}
	require.NoError(t, l.Close())

	require.Empty(t, grepDir(t, dir, token), "the token is still in a file")
	problems, checked, err := VerifyCounted(dir)
	require.NoError(t, err)
	require.Empty(t, problems, "verify after a rewrite: %v", problems)
	require.NotEmpty(t, checked.Scrubbed, "verify must say which seqs are scrubbed")
	require.Equal(t, "global", checked.Scrubbed[0].Stream)

	// Reopen (the trusted path too), and stock zstd prints every line.
	l2 := openLog(t, dir, Options{Trusted: map[string]uint64{"global": lastBefore}})
	checkEvents(t, scanAll(t, l2, "global", 1), got)
	if zstd, err := exec.LookPath("zstd"); err == nil {
		lines := 0
		for _, p := range segmentPaths(t, dir, "global") {
			out, err := exec.Command(zstd, "-dc", p).Output()
			require.NoError(t, err, "zstd -dc %s", p)
			require.NotContains(t, string(out), token)
			lines += strings.Count(string(out), "\n") - 1 // the stream header
		}
		require.Equal(t, len(got), lines, "zstd -dc printed %d event lines, want %d", lines, len(got))
	}

	// A second rewrite of an already scrubbed batch keeps its hash.
	rep2, err := l2.Rewrite(context.Background(), "global", scrubToken("[scrubbed]"), RewriteOptions{})
	require.NoError(t, err)
	require.Equal(t, 4, rep2.Events)
	require.NoError(t, l2.Close())
	problems, err = Verify(dir)
	require.NoError(t, err)
	require.Empty(t, problems)
}

func TestRewriteErrRewrite(t *testing.T) {
	dir := t.TempDir()
	l, _ := rewriteLog(t, dir, Options{SegmentSize: 1500, MaxBatch: 2}, "TOK")
	before := grepDir(t, dir, "TOK")
	_, err := l.Rewrite(context.Background(), "global", func(seq uint64, line []byte) ([]byte, bool, error) {
		if !bytes.Contains(line, []byte("TOK")) {
			return line, false, nil
		}
		return bytes.Replace(line, []byte(`"id":"`), []byte(`"id":"x`), 1), true, nil
	}, RewriteOptions{})
	require.ErrorIs(t, err, ErrRewrite, "got %v, want ErrRewrite for a changed id", err)
	require.NoError(t, l.Close())
	require.Equal(t, before, grepDir(t, dir, "TOK"), "a refused rewrite changes nothing")
	problems, err := Verify(dir)
	require.NoError(t, err)
	require.Empty(t, problems)
	requireNoTemps(t, dir)
}

func requireNoTemps(t *testing.T, dir string) {
	t.Helper()
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && (strings.HasSuffix(p, rewriteSuffix) || strings.Contains(p, brokenSuffix)) {
			t.Errorf("%s left behind", p)
		}
		return nil
	})
}

// TestRewriteFaults fails each write, sync and rename of a rewrite in
// turn: the error is reported, every event is still there, the log
// verifies and no copy of a segment is left behind.
func TestRewriteFaults(t *testing.T) {
	const token = "TOKEN-fault"
	// Count what a rewrite does, on a log already sealed (so the
	// writer's own writes are not counted).
	count := func() (w, s, r int) {
		dir := t.TempDir()
		l, _ := rewriteLog(t, dir, Options{SegmentSize: 1500, MaxBatch: 2}, token)
		require.NoError(t, l.Seal(context.Background(), "global"))
		require.NoError(t, l.Close())
		ffs := &FaultFS{}
		l2 := openLog(t, dir, Options{FS: ffs})
		_, err := l2.Rewrite(context.Background(), "global", scrubToken(token), RewriteOptions{})
		require.NoError(t, err)
		w, s = ffs.Counts()
		return w, s, ffs.renames
	}
	writes, syncs, renames := count()
	require.GreaterOrEqual(t, renames, 2, "want a rewrite of several segments")
	cases := []struct {
		name string
		ffs  func(n int) *FaultFS
		n    int
	}{
		{"write", func(n int) *FaultFS { return &FaultFS{FailWrite: n} }, writes},
		{"partial write", func(n int) *FaultFS { return &FaultFS{FailWrite: n, Partial: true} }, writes},
		{"sync", func(n int) *FaultFS { return &FaultFS{FailSync: n} }, syncs},
		{"rename", func(n int) *FaultFS { return &FaultFS{FailRename: n} }, renames},
	}
	for _, c := range cases {
		for n := 1; n <= c.n; n++ {
			dir := t.TempDir()
			l, all := rewriteLog(t, dir, Options{SegmentSize: 1500, MaxBatch: 2}, token)
			require.NoError(t, l.Seal(context.Background(), "global"))
			require.NoError(t, l.Close())
			ffs := c.ffs(n)
			l2, err := OpenLog(dir, Options{FS: ffs})
			require.NoError(t, err)
			_, err = l2.Rewrite(context.Background(), "global", scrubToken(token), RewriteOptions{})
			l2.Close()
			require.Error(t, err, "%s %d: the fault must be reported", c.name, n)
			require.ErrorIs(t, err, ErrInjected, "%s %d: got %v", c.name, n, err)

			problems, err := Verify(dir)
			require.NoError(t, err)
			require.Empty(t, problems, "%s %d: %v", c.name, n, problems)
			requireNoTemps(t, dir)
			l3 := openLog(t, dir, Options{})
			got := scanAll(t, l3, "global", 1)
			require.Len(t, got, len(all), "%s %d: events lost", c.name, n)
			for i := range got {
				require.Equal(t, all[i].ID, got[i].ID)
			}
			// Rerun without the fault: it finishes the job.
			_, err = l3.Rewrite(context.Background(), "global", scrubToken(token), RewriteOptions{})
			require.NoError(t, err)
			require.NoError(t, l3.Close())
			require.Empty(t, grepDir(t, dir, token), "%s %d: the rerun left the token", c.name, n)
		}
	}
}

// TestRewriteBesideScan rewrites a sealed segment while a scan that took
// its snapshot before holds on: the scan reads the old or the new file
// whole, never a mix.
func TestRewriteBesideReadOnly(t *testing.T) {
	const token = "TOKEN-ro"
	dir := t.TempDir()
	l, all := rewriteLog(t, dir, Options{SegmentSize: 1500, MaxBatch: 2}, token)
	require.NoError(t, l.Seal(context.Background(), "global"))
	ro, err := OpenLogReadOnly(dir, Options{})
	require.NoError(t, err)
	_, err = l.Rewrite(context.Background(), "global", scrubToken(token), RewriteOptions{})
	require.NoError(t, err)
	got := scanAll(t, ro, "global", 1)
	require.Len(t, got, len(all))
	got = scanAll(t, l, "global", 1)
	require.Len(t, got, len(all))
}

// TestRewriteBroken: a .broken copy a torn-tail repair kept holds the
// text too; Rewrite rewrites its whole batches and drops its torn bytes.
func TestRewriteBroken(t *testing.T) {
	const token = "TOKEN-broken"
	dir := t.TempDir()
	l := openLog(t, dir, Options{MaxBatch: 2})
	mustAppend(t, l, "global", []Envelope{testEvent(0), secretEvent(1, token), testEvent(2)})
	require.NoError(t, l.Close())
	seg := segmentPaths(t, dir, "global")[0]
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte{0x5D, 0x2A, 0x4D, 0x18, 0x58, 0, 0}) // a torn record
	require.NoError(t, err)
	require.NoError(t, f.Close())
	l2 := openLog(t, dir, Options{})
	require.Len(t, l2.Repairs(), 1)
	broken := l2.Repairs()[0].Broken
	rep, err := l2.Rewrite(context.Background(), "global", scrubToken(token), RewriteOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Broken, "the .broken copy held the token")
	require.Equal(t, 1, rep.Events)
	require.NoError(t, l2.Close())
	bs := readBatches(t, broken)
	require.Len(t, bs, 2, "the copy keeps its whole batches")
	for _, b := range bs {
		for _, e := range b.Events {
			require.NotContains(t, string(e.Data), token)
		}
	}
	require.Empty(t, grepDir(t, dir, token))
	requireNoTemps := func() {
		filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
			require.False(t, strings.HasSuffix(p, rewriteSuffix), "%s left behind", p)
			return nil
		})
	}
	requireNoTemps()
	problems, err := Verify(dir)
	require.NoError(t, err)
	require.Empty(t, problems)
}
