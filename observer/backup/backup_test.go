package backup_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/observer"
	"dshmem/observer/backup"
	"dshmem/replay"
	"dshmem/sqlstore/recall"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fixture: two workspaces and the global scope, a few hundred
// events over small segments (so some are sealed), remembered entries,
// and compaction summaries on days of August and September 2026.

func openRoot(t *testing.T, root string) *observer.Engine {
	t.Helper()
	eng, err := observer.Open(context.Background(), root, observer.Options{Log: events.Options{SegmentSize: 2 << 10}})
	require.NoError(t, err)
	t.Cleanup(func() { eng.Close() })
	return eng
}

func line(id, typ, at, session, cwd string, data any) []byte {
	env := map[string]any{"id": id, "type": typ, "time": at, "data": data}
	if session != "" {
		env["session"] = session
	}
	if cwd != "" {
		env["cwd"] = cwd
	}
	b, _ := json.Marshal(env)
	return b
}

func ingest(t *testing.T, eng *observer.Engine, lines [][]byte) {
	t.Helper()
	_, outs, err := eng.Ingest(context.Background(), lines)
	require.NoError(t, err)
	for _, o := range outs {
		require.NotEqual(t, observer.StatusRejected, o.Status, "line %d rejected: %v", o.Line, o.Error)
	}
}

// fill writes n rounds of chatter into two workspaces, with a
// compaction summary per round on the day of day(i).
func fill(t *testing.T, eng *observer.Engine, tag string, n int) {
	t.Helper()
	var lines [][]byte
	for i := 0; i < n; i++ {
		cwd := []string{"/w/alpha", "/w/beta"}[i%2]
		s := fmt.Sprintf("%s-s%d", tag, i%4)
		day := time.Date(2026, 8, 1+i%40, 9, 0, 0, 0, time.UTC)
		at := day.Add(time.Duration(i) * time.Second).Format(time.RFC3339)
		lines = append(lines,
			line(fmt.Sprintf("%s:%d:u", tag, i), "user/message", at, s, cwd, map[string]any{"text": fmt.Sprintf("round %d of %s: the parser fails on tabs and the cache key drifts", i, tag)}),
			line(fmt.Sprintf("%s:%d:a", tag, i), "assistant/message", at, s, cwd, map[string]any{"text": "Looked at the lexer; tabs become spaces now."}),
			line(fmt.Sprintf("%s:%d:c", tag, i), "compaction/summary", at, s, cwd, map[string]any{"compactionId": fmt.Sprintf("%s-c%d", tag, i), "text": fmt.Sprintf("summary %d: fixed tabs in %s", i, cwd)}),
		)
		if i == 0 {
			lines = append(lines, line(tag+":g", "memory/remember", at, "", "",
				map[string]any{"content": "Answer in English, tersely (" + tag + ")", "type": "preference"}))
		}
		if i%5 == 0 {
			lines = append(lines, line(fmt.Sprintf("%s:%d:r", tag, i), "memory/remember", at, s, cwd,
				map[string]any{"content": fmt.Sprintf("The lexer turns tabs into four spaces (%s %d)", tag, i), "type": "decision"}))
		}
		if i%4 == 3 { // one batch per call and stream: several calls fill several segments
			ingest(t, eng, lines)
			lines = nil
		}
	}
	if len(lines) > 0 {
		ingest(t, eng, lines)
	}
	require.NoError(t, eng.WriteFiles(context.Background()))
}

// recallIDs is what recall answers for a query: ids in order.
func recallIDs(t *testing.T, eng *observer.Engine, q string) []string {
	t.Helper()
	res, err := eng.Recall(context.Background(), recall.Query{Text: q, Kind: recall.KindAll, Limit: 20, Now: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)})
	require.NoError(t, err)
	var ids []string
	for _, it := range res.Items {
		ids = append(ids, it.ID)
	}
	require.NotEmpty(t, ids, "recall %q found nothing: the fixture would prove nothing", q)
	return ids
}

// verifyReplay runs `replay --verify` on a closed root.
func verifyReplay(t *testing.T, root string) {
	t.Helper()
	eng := openRoot(t, root)
	rep, err := replay.Verify(context.Background(), eng.Log(), eng.Root(), eng.Store(), replay.VerifyOptions{})
	require.NoError(t, err)
	require.Empty(t, rep.Differences, "replay --verify of %s: got %v, want none", root, rep.Differences)
	require.NotZero(t, rep.Files, "replay --verify compared no file")
	require.NoError(t, eng.Close())
}

func TestBackupRestoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	root, dir := filepath.Join(base, "memory"), filepath.Join(base, "memory-backup")
	eng := openRoot(t, root)
	fill(t, eng, "a", 120)
	before := recallIDs(t, eng, "parser tabs cache")
	entries, err := eng.Entries(ctx, observer.EntryFilter{})
	require.NoError(t, err)
	require.NotEmpty(t, entries)

	rep, err := backup.Run(ctx, eng, backup.Options{}) // the default: memory-backup/ beside the root
	require.NoError(t, err)
	assert.Equal(t, dir, rep.To)
	assert.False(t, rep.Unchanged)
	assert.True(t, rep.Snapshot)
	require.Greater(t, len(rep.Copied), 3, "got %v: the fixture should have several segments", rep.Copied)
	require.NoError(t, eng.Close())

	v, err := backup.Verify(ctx, dir)
	require.NoError(t, err)
	require.True(t, v.OK(), "verify of a fresh backup: got %v", v.Problems)
	assert.Equal(t, rep.Files, v.Files)
	var names []string
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{backup.LockFile, "index-00000000000000000001.db", backup.LogDir, backup.ManifestFile}, names,
		"a backup and its verify leave nothing else (no -wal, -shm, temporary files)")
	m, err := backup.ReadManifest(dir)
	require.NoError(t, err)
	for _, f := range []string{backup.ManifestFile, m.Index.Path, m.Files[0].Path} {
		st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f)))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "%s: a backup is for its owner only", f)
	}

	// The root is gone; the backup brings it back.
	require.NoError(t, os.RemoveAll(root))
	rr, err := backup.Restore(ctx, dir, root)
	require.NoError(t, err)
	assert.Equal(t, "snapshot", rr.Index, "got %+v", rr)
	// The backup's own event comes after the copy: the backup holds
	// what the snapshot does, and the restore had nothing to fold.
	assert.Zero(t, rr.CaughtUp, "got %+v", rr)
	assert.Equal(t, rep.Streams, rr.Streams)
	verifyReplay(t, root)

	eng = openRoot(t, root)
	assert.Equal(t, before, recallIDs(t, eng, "parser tabs cache"), "recall after restore")
	got, err := eng.Entries(ctx, observer.EntryFilter{})
	require.NoError(t, err)
	require.Equal(t, len(entries), len(got))
	for i := range got {
		assert.Equal(t, entries[i].ID, got[i].ID)
		assert.Equal(t, entries[i].Content, got[i].Content)
	}
	for _, f := range []string{"index.md", "global.md", "sessions/2026-08-02.md"} {
		_, err := os.Stat(filepath.Join(root, f))
		assert.NoError(t, err, "projection %s after restore", f)
	}
}

func TestBackupUnchangedCopiesNothing(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	root, dir := filepath.Join(base, "r"), filepath.Join(base, "b")
	eng := openRoot(t, root)
	fill(t, eng, "a", 40)
	first, err := backup.Run(ctx, eng, backup.Options{To: dir})
	require.NoError(t, err)
	require.NotEmpty(t, first.Copied)

	second, err := backup.Run(ctx, eng, backup.Options{To: dir})
	require.NoError(t, err)
	assert.True(t, second.Unchanged, "got %+v", second)
	assert.Empty(t, second.Copied, "nothing changed: got %v copied", second.Copied)
	assert.Zero(t, second.CopiedBytes)
	assert.Equal(t, first.Generation, second.Generation)
	assert.Greater(t, second.EventSeq, first.EventSeq, "each backup records itself")

	// A change copies the changed segments and a new snapshot, not the
	// sealed segments the backup already holds.
	fill(t, eng, "b", 2)
	third, err := backup.Run(ctx, eng, backup.Options{To: dir})
	require.NoError(t, err)
	assert.False(t, third.Unchanged)
	assert.Equal(t, first.Generation+1, third.Generation)
	assert.Less(t, len(third.Copied), len(first.Copied), "got %v after %v", third.Copied, first.Copied)
	assert.Contains(t, third.Removed, fmt.Sprintf("index-%020d.db", first.Generation), "the old snapshot goes")
	v, err := backup.Verify(ctx, dir)
	require.NoError(t, err)
	require.True(t, v.OK(), "got %v", v.Problems)
	assert.Equal(t, eng.Log().LastSeq(observer.GlobalStream)-1, third.Streams[observer.GlobalStream], "the backup holds the global stream up to before its own record")
}

func TestVerifyFindsDamage(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	eng := openRoot(t, filepath.Join(base, "r"))
	fill(t, eng, "a", 40)
	dir := filepath.Join(base, "b")
	_, err := backup.Run(ctx, eng, backup.Options{To: dir})
	require.NoError(t, err)
	m, err := backup.ReadManifest(dir)
	require.NoError(t, err)
	require.Greater(t, len(m.Files), 2)

	t.Run("FlippedByte", func(t *testing.T) {
		p := filepath.Join(dir, filepath.FromSlash(m.Files[1].Path))
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		b[len(b)/2] ^= 0x40
		require.NoError(t, os.WriteFile(p, b, 0o644))
		v, err := backup.Verify(ctx, dir)
		require.NoError(t, err)
		require.False(t, v.OK())
		assert.Contains(t, strings.Join(v.Problems, "\n"), m.Files[1].Path+" does not match the manifest")
		b[len(b)/2] ^= 0x40
		require.NoError(t, os.WriteFile(p, b, 0o644))
		v, err = backup.Verify(ctx, dir)
		require.NoError(t, err)
		require.True(t, v.OK(), "flipped back: got %v", v.Problems)
	})
	t.Run("MissingFile", func(t *testing.T) {
		p := filepath.Join(dir, filepath.FromSlash(m.Files[0].Path))
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NoError(t, os.Remove(p))
		v, err := backup.Verify(ctx, dir)
		require.NoError(t, err)
		require.False(t, v.OK())
		assert.Contains(t, strings.Join(v.Problems, "\n"), m.Files[0].Path+" is missing")
		require.NoError(t, os.WriteFile(p, b, 0o644))
	})
	t.Run("MissingSnapshot", func(t *testing.T) {
		p := filepath.Join(dir, m.Index.Path)
		require.NoError(t, os.Rename(p, p+".x"))
		defer os.Rename(p+".x", p)
		v, err := backup.Verify(ctx, dir)
		require.NoError(t, err)
		assert.Contains(t, strings.Join(v.Problems, "\n"), m.Index.Path+" is missing")
	})
	t.Run("NoManifest", func(t *testing.T) {
		_, err := backup.Verify(ctx, t.TempDir())
		require.ErrorIs(t, err, backup.ErrNoManifest)
	})
}

func TestRestoreRefusesNonEmptyRoot(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	eng := openRoot(t, filepath.Join(base, "r"))
	fill(t, eng, "a", 10)
	dir := filepath.Join(base, "b")
	_, err := backup.Run(ctx, eng, backup.Options{To: dir})
	require.NoError(t, err)

	target := filepath.Join(base, "other")
	require.NoError(t, os.MkdirAll(target, 0o700))
	keep := filepath.Join(target, "notes.txt")
	require.NoError(t, os.WriteFile(keep, []byte("mine"), 0o600))
	_, err = backup.Restore(ctx, dir, target)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not empty")
	ents, err := os.ReadDir(target)
	require.NoError(t, err)
	require.Len(t, ents, 1, "the refused restore changed the root")
	b, err := os.ReadFile(keep)
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b))
}

func TestRestoreOfDamagedBackupLeavesNothing(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	eng := openRoot(t, filepath.Join(base, "r"))
	fill(t, eng, "a", 40)
	dir := filepath.Join(base, "b")
	_, err := backup.Run(ctx, eng, backup.Options{To: dir})
	require.NoError(t, err)
	m, err := backup.ReadManifest(dir)
	require.NoError(t, err)
	p := filepath.Join(dir, filepath.FromSlash(m.Files[len(m.Files)-1].Path))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	b[len(b)-10] ^= 1
	require.NoError(t, os.WriteFile(p, b, 0o644))
	target := filepath.Join(base, "new")
	_, err = backup.Restore(ctx, dir, target)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not match its manifest")
	_, err = os.Stat(target)
	assert.ErrorIs(t, err, os.ErrNotExist, "a failed restore leaves no root behind")
}

func TestBackupDirRules(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	root := filepath.Join(base, "r")
	eng := openRoot(t, root)
	fill(t, eng, "a", 4)
	t.Run("InsideRoot", func(t *testing.T) {
		_, err := backup.Run(ctx, eng, backup.Options{To: filepath.Join(root, "bk")})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "overlap")
	})
	t.Run("ForeignDirectory", func(t *testing.T) {
		d := filepath.Join(base, "photos")
		require.NoError(t, os.MkdirAll(d, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(d, "cat.jpg"), []byte("x"), 0o600))
		_, err := backup.Run(ctx, eng, backup.Options{To: d})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "not a dshmem backup")
		ents, _ := os.ReadDir(d)
		assert.Len(t, ents, 1, "the refused directory got files") // cat.jpg
	})
	t.Run("Env", func(t *testing.T) {
		t.Setenv(backup.EnvDir, filepath.Join(base, "env-bk"))
		assert.Equal(t, filepath.Join(base, "env-bk"), backup.DefaultDir(root))
	})
}

// dirState lists every file under dir with its bytes' hash.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	st := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		st[p] = fmt.Sprintf("%x", sha256.Sum256(b))
		return nil
	}))
	return st
}

// TestBackupOfAnotherRootRefused: a backup directory holding one root's
// backup is not brought up to another root (which would remove the
// first root's files from it): not for a new empty root, a root with
// the same workspaces, one holding the first part of the same events, or
// a root made anew at the first one's path; nor when the backup cannot
// be read. The first root moved elsewhere, after a purge, or a root
// restored from the backup, is the same root and backs up into it.
func TestBackupOfAnotherRootRefused(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	rootA := filepath.Join(base, "a")
	engA := openRoot(t, rootA)
	fill(t, engA, "a", 12)
	dir := filepath.Join(base, "memory-backup")
	_, err := backup.Run(ctx, engA, backup.Options{To: dir})
	require.NoError(t, err)
	require.NoError(t, engA.Close())

	refused := func(t *testing.T, root, why string) {
		t.Helper()
		before := dirState(t, dir)
		eng := openRoot(t, root)
		_, err := backup.Run(ctx, eng, backup.Options{To: dir})
		var de *backup.DirError
		require.ErrorAs(t, err, &de, "backing %s up into another root's backup", root)
		assert.Contains(t, err.Error(), "holds the backup of "+rootA)
		assert.Contains(t, err.Error(), why)
		assert.Contains(t, err.Error(), "--to")
		require.NoError(t, eng.Close())
		assert.Equal(t, before, dirState(t, dir), "the refused backup changed the directory")
		vr, err := backup.Verify(ctx, dir)
		require.NoError(t, err)
		require.True(t, vr.OK(), "backup verify after a refused run: %v", vr.Problems)
	}
	t.Run("EmptyRoot", func(t *testing.T) {
		refused(t, filepath.Join(base, "empty"), "it holds streams this root never had, nor purged")
	})
	// filled is a new closed root under base with n rounds of tag.
	filled := func(t *testing.T, name, tag string, n int) string {
		root := filepath.Join(base, name)
		eng := openRoot(t, root)
		fill(t, eng, tag, n)
		require.NoError(t, eng.Close())
		return root
	}
	t.Run("SameWorkspaces", func(t *testing.T) {
		refused(t, filled(t, "twin", "b", 6), "its streams hold other events than this root's")
	})
	// Ids and times can agree across roots (an import's do): a root that
	// holds the first part of the same events is not the backup's root
	// either, and its backup would drop the rest.
	t.Run("SameEventsFewer", func(t *testing.T) {
		refused(t, filled(t, "subset", "a", 4), "it holds events this root does not (ws-")
	})
	t.Run("UnreadableBackup", func(t *testing.T) {
		m, err := backup.ReadManifest(dir)
		require.NoError(t, err)
		// spoil writes spoilt(its bytes) over a file of the backup until
		// the test ends.
		spoil := func(rel string, spoilt func([]byte) []byte) []byte {
			p := filepath.Join(dir, filepath.FromSlash(rel))
			good, err := os.ReadFile(p)
			require.NoError(t, err)
			bad := spoilt(slices.Clone(good))
			require.NoError(t, os.WriteFile(p, bad, 0o600))
			t.Cleanup(func() { require.NoError(t, os.WriteFile(p, good, 0o600)) })
			return bad
		}
		p := filepath.Join(dir, filepath.FromSlash(m.Files[0].Path))
		bad := spoil(m.Files[0].Path, func(b []byte) []byte { b[len(b)/2] ^= 1; return b })
		// The index snapshot, which answers first, is unreadable too, so
		// the damaged copy of the log is what is read.
		spoil(m.Index.Path, func([]byte) []byte { return bytes.Repeat([]byte("not a database "), 300) })
		eng := openRoot(t, rootA) // the backup's own root
		_, err = backup.Run(ctx, eng, backup.Options{To: dir})
		require.NoError(t, eng.Close())
		var de *backup.DirError
		require.ErrorAs(t, err, &de)
		assert.Contains(t, err.Error(), "whose it is cannot be told: events of "+m.Files[0].Path[len("log/"):strings.LastIndex(m.Files[0].Path, "/")])
		assert.NotContains(t, err.Error(), "other events")
		assert.Contains(t, err.Error(), "backup verify")
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, bad, b, "the refused backup rewrote the damaged copy")
	})
	t.Run("MadeAnewAtThePath", func(t *testing.T) {
		moved := filepath.Join(base, "a-old")
		require.NoError(t, os.Rename(rootA, moved))
		t.Cleanup(func() {
			require.NoError(t, os.RemoveAll(rootA))
			require.NoError(t, os.Rename(moved, rootA))
		})
		eng := openRoot(t, rootA)
		fill(t, eng, "c", 6)
		require.NoError(t, eng.Close())
		refused(t, rootA, "its streams hold other events than this root's")
	})
	t.Run("MovedRoot", func(t *testing.T) {
		moved := filepath.Join(base, "a-moved")
		require.NoError(t, os.Rename(rootA, moved))
		t.Cleanup(func() { require.NoError(t, os.Rename(moved, rootA)) })
		eng := openRoot(t, moved)
		fill(t, eng, "d", 2)
		rep, err := backup.Run(ctx, eng, backup.Options{To: dir})
		require.NoError(t, err)
		assert.NotEmpty(t, rep.Copied)
		require.NoError(t, eng.Close())
	})
	// A stream the backup holds and this root purged since is this
	// root's: the purge is recorded, and the backup drops the stream.
	t.Run("PurgedSince", func(t *testing.T) {
		eng := openRoot(t, rootA)
		key := observer.StreamForCwd("/w/beta")
		_, err := eng.PurgeScope(ctx, key, key)
		require.NoError(t, err)
		rep, err := backup.Run(ctx, eng, backup.Options{To: dir})
		require.NoError(t, err)
		assert.NotEmpty(t, rep.Removed, "the purged stream's copies stay in the backup")
		require.NoError(t, eng.Close())
	})
	t.Run("RestoredRoot", func(t *testing.T) {
		root := filepath.Join(base, "restored")
		_, err := backup.Restore(ctx, dir, root)
		require.NoError(t, err)
		eng := openRoot(t, root)
		_, err = backup.Run(ctx, eng, backup.Options{To: dir})
		require.NoError(t, err)
		require.NoError(t, eng.Close())
	})
}
