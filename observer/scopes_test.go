package observer_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"dshmem/events"
	"dshmem/observer"
	"dshmem/observer/broker"
	"dshmem/projector"
	"dshmem/sqlstore"
	"dshmem/sqlstore/recall"
)

// scopeFixture is a root with the global scope and two workspaces, each
// holding an entry, a conversation and a compaction summary that carry
// a token unique to the scope, so that a test can look for every byte
// of a scope on disk.
type scopeFixture struct {
	root      string
	eng       *observer.Engine
	a, b      string // workspace directories
	ka, kb    string // their keys
	tokA      string // in every event of a
	tokB      string
	tokGlobal string
}

func newScopeFixture(t *testing.T) *scopeFixture {
	t.Helper()
	f := &scopeFixture{root: t.TempDir(), a: "/home/u/alpha", b: "/home/u/beta",
		tokA: "zorbulon", tokB: "quaxifrit", tokGlobal: "plimbertag"}
	f.ka, f.kb = observer.StreamForCwd(f.a), observer.StreamForCwd(f.b)
	f.eng = openEngine(t, f.root)
	ctx := context.Background()
	for _, w := range []struct{ dir, tok, sess string }{{f.a, f.tokA, "s-alpha"}, {f.b, f.tokB, "s-beta"}} {
		_, err := f.eng.Remember(ctx, observer.RememberRequest{Cwd: w.dir, Content: "The " + w.tok + " service listens on port 7070", Title: w.tok + " port", Time: memT0})
		require.NoError(t, err)
		f.ingest(t,
			fmt.Sprintf(`{"id":"%s:1","type":"session/start","time":"2026-08-18T10:01:00Z","session":"%s","cwd":"%s","data":{"origin":"top"}}`, w.sess, w.sess, w.dir),
			fmt.Sprintf(`{"id":"%s:2","type":"user/message","time":"2026-08-18T10:02:00Z","session":"%s","cwd":"%s","data":{"text":"restart the %s service please"}}`, w.sess, w.sess, w.dir, w.tok),
			fmt.Sprintf(`{"id":"%s:3","type":"compaction/summary","time":"2026-08-18T10:03:00Z","session":"%s","cwd":"%s","data":{"compactionId":"c-%s","text":"We restarted %s twice."}}`, w.sess, w.sess, w.dir, w.sess, w.tok),
		)
	}
	_, err := f.eng.Remember(ctx, observer.RememberRequest{Content: "Prefer " + f.tokGlobal + " everywhere", Type: "preference", Time: memT0})
	require.NoError(t, err)
	f.ingest(t, fmt.Sprintf(`{"id":"g:1","type":"compaction/summary","time":"2026-08-18T10:04:00Z","session":"s-g","data":{"compactionId":"c-g","text":"Global %s summary."}}`, f.tokGlobal))
	require.NoError(t, f.eng.WriteFiles(ctx))
	return f
}

func (f *scopeFixture) ingest(t *testing.T, lines ...string) {
	t.Helper()
	raw := make([][]byte, len(lines))
	for i, l := range lines {
		raw[i] = []byte(l)
	}
	res, outs, err := f.eng.Ingest(context.Background(), raw)
	require.NoError(t, err)
	require.Equal(t, len(lines), res.Appended, "ingest: %+v %+v", res, outs)
}

// recalled reports whether a recall over every scope, a recall scoped
// as a packet's is (the workspace and global) and an episodic search
// find tok.
func (f *scopeFixture) recalled(t *testing.T, tok, key string) (every, scoped, episodic bool) {
	t.Helper()
	ctx := context.Background()
	has := func(q recall.Query) bool {
		q.Timeout = 10e9
		res, err := f.eng.Recall(ctx, q)
		require.NoError(t, err)
		for _, it := range res.Items {
			if strings.Contains(it.Title+it.Text, tok) {
				return true
			}
		}
		return false
	}
	return has(recall.Query{Text: tok}),
		has(recall.Query{Text: tok, Scopes: []string{key, observer.GlobalStream}}),
		has(recall.Query{Text: tok, Kind: recall.KindEpisodic})
}

// snapshot reads every file under root but the index and the lock,
// by root-relative path.
func snapshot(t *testing.T, root string, skip func(rel string) bool) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if skip != nil && skip(rel) {
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = b
		return err
	}))
	return out
}

// onDisk lists the files under root holding tok: raw bytes, and the
// decompressed bytes of each segment.
func onDisk(t *testing.T, root, tok string) []string {
	t.Helper()
	var hits []string
	dec, err := zstd.NewReader(nil)
	require.NoError(t, err)
	defer dec.Close()
	for rel, b := range snapshot(t, root, nil) {
		if bytes.Contains(b, []byte(tok)) {
			hits = append(hits, rel)
			continue
		}
		if strings.HasSuffix(rel, ".zst") || strings.Contains(rel, ".zst.") {
			if err := dec.Reset(bytes.NewReader(b)); err == nil {
				if plain, err := io.ReadAll(dec); err == nil && bytes.Contains(plain, []byte(tok)) {
					hits = append(hits, rel+" (decompressed)")
				}
			}
		}
	}
	sort.Strings(hits)
	return hits
}

func TestScopeLifecycle(t *testing.T) {
	ctx := context.Background()
	f := newScopeFixture(t)
	eng := f.eng

	t.Run("List", func(t *testing.T) {
		list, err := eng.Scopes(ctx, false)
		require.NoError(t, err)
		keys := make([]string, len(list))
		for i, s := range list {
			keys[i] = s.Key
		}
		want := []string{observer.GlobalStream, f.ka, f.kb}
		sort.Strings(want)
		require.Equal(t, want, keys)
		for _, s := range list {
			assert.False(t, s.Archived, "%s", s.Key)
			assert.Positive(t, s.Bytes, "%s: bytes", s.Key)
			assert.Equal(t, 1, s.Entries["active"], "%s: %+v", s.Key, s.Entries)
			assert.Contains(t, s.Entries, "forgotten", "%s: every status is counted", s.Key)
			if s.Key == f.ka {
				assert.Equal(t, f.a, s.Dir)
				assert.Equal(t, 1, s.Sessions)
				assert.Equal(t, "2026-08-18T10:03:00Z", s.LastActivity)
			}
			if s.Key == observer.GlobalStream {
				assert.Equal(t, "", s.Dir)
			}
		}
		bin, err := eng.Scopes(ctx, true)
		require.NoError(t, err)
		assert.Empty(t, bin)
	})

	t.Run("ScopeKey", func(t *testing.T) {
		for arg, want := range map[string]string{f.ka: f.ka, f.a: f.ka, f.a + "/src/deep": f.ka, "global": "global", f.b + "/": f.kb} {
			got, err := eng.ScopeKey(arg)
			require.NoError(t, err, "%s", arg)
			assert.Equal(t, want, got, "%s", arg)
		}
		for _, arg := range []string{"", "ws-00000000000000000000", "/nowhere/at/all", "relative/dir", "ws-xyz"} {
			_, err := eng.ScopeKey(arg)
			assert.ErrorIs(t, err, observer.ErrUnknownScope, "%q", arg)
		}
	})

	every, scoped, epi := f.recalled(t, f.tokA, f.ka)
	require.True(t, every && scoped && epi, "before the archive: every %v, scoped %v, episodic %v", every, scoped, epi)

	t.Run("Archive", func(t *testing.T) {
		_, err := eng.ArchiveScope(ctx, observer.GlobalStream)
		require.ErrorIs(t, err, observer.ErrGlobalScope)
		before := snapshot(t, f.root, func(rel string) bool { return !strings.HasPrefix(rel, "scopes/"+f.ka+"/") })
		require.NotEmpty(t, before)
		info, err := eng.ArchiveScope(ctx, f.ka)
		require.NoError(t, err)
		assert.True(t, info.Archived)
		_, err = eng.ArchiveScope(ctx, f.ka)
		require.ErrorIs(t, err, observer.ErrScopeArchived)

		every, scoped, epi := f.recalled(t, f.tokA, f.ka)
		assert.False(t, every || scoped || epi, "archived: every %v, scoped %v, episodic %v; want none", every, scoped, epi)
		every, scoped, epi = f.recalled(t, f.tokB, f.kb)
		assert.True(t, every && scoped && epi, "the other scope: every %v, scoped %v, episodic %v", every, scoped, epi)
		res, err := eng.Recall(ctx, recall.Query{Text: projector.EntryID(f.ka, 1, 0)})
		require.NoError(t, err)
		assert.Empty(t, res.Items, "an archived entry by its id")

		// The files moved, byte for byte.
		_, err = os.Stat(filepath.Join(f.root, "scopes", f.ka))
		assert.ErrorIs(t, err, fs.ErrNotExist, "scopes/%s after the archive", f.ka)
		after := snapshot(t, f.root, func(rel string) bool { return !strings.HasPrefix(rel, "archived/"+f.ka+"/") })
		require.Equal(t, len(before), len(after), "files before %v after %v", keysOf(before), keysOf(after))
		for rel, b := range before {
			assert.Equal(t, string(b), string(after["archived"+strings.TrimPrefix(rel, "scopes")]), "%s", rel)
		}

		sc, err := broker.Context(ctx, eng, broker.ContextRequest{Cwd: f.a, Now: memT0})
		require.NoError(t, err)
		all := sc.Stable + sc.Workspace + sc.Dynamic
		assert.NotContains(t, all, f.tokA, "the session-start context of an archived scope")
		assert.Equal(t, observer.GlobalStream, sc.Scope)
		assert.Contains(t, strings.Join(sc.Notes, "\n"), "archived")

		bin, err := eng.Scopes(ctx, true)
		require.NoError(t, err)
		require.Len(t, bin, 1)
		assert.Equal(t, f.ka, bin[0].Key)
		assert.Equal(t, f.a, bin[0].Dir)
		verifyReplay(t, eng)
	})

	t.Run("EventsForArchived", func(t *testing.T) {
		// A session in the archived directory: kept, folded, still archived.
		f.ingest(t, `{"id":"s-late:1","type":"user/message","time":"2026-08-18T11:00:00Z","session":"s-late","cwd":"/home/u/alpha/src","data":{"text":"late zorbulon question"}}`)
		info, err := eng.ScopeInfo(ctx, f.ka)
		require.NoError(t, err)
		assert.True(t, info.Archived)
		assert.Equal(t, 2, info.Sessions)
		_, _, epi := f.recalled(t, "late", f.ka)
		assert.False(t, epi)
		verifyReplay(t, eng)
	})

	t.Run("Restore", func(t *testing.T) {
		_, err := eng.RestoreScope(ctx, f.kb)
		require.ErrorIs(t, err, observer.ErrScopeNotArchived)
		info, err := eng.RestoreScope(ctx, f.ka)
		require.NoError(t, err)
		assert.False(t, info.Archived)
		every, scoped, epi := f.recalled(t, f.tokA, f.ka)
		assert.True(t, every && scoped && epi, "restored: every %v, scoped %v, episodic %v", every, scoped, epi)
		_, err = os.Stat(filepath.Join(f.root, "archived"))
		assert.ErrorIs(t, err, fs.ErrNotExist, "an empty recycle bin leaves no directory")
		_, err = os.Stat(filepath.Join(f.root, projector.SummaryPath(f.ka)))
		assert.NoError(t, err)
		sc, err := broker.Context(ctx, eng, broker.ContextRequest{Cwd: f.a, Now: memT0})
		require.NoError(t, err)
		assert.Contains(t, sc.Workspace, f.tokA)
		verifyReplay(t, eng)
	})

	t.Run("CountsFollowStatus", func(t *testing.T) {
		_, err := eng.Remember(ctx, observer.RememberRequest{Cwd: f.a, Content: "a second alpha fact", Time: memT0})
		require.NoError(t, err)
		_, err = eng.Forget(ctx, projector.EntryID(f.ka, 1, 0), "moved")
		require.NoError(t, err)
		info, err := eng.ScopeInfo(ctx, f.ka)
		require.NoError(t, err)
		want := map[string]int{"active": 0, "conflict": 0, "superseded": 0, "forgotten": 0}
		es, err := eng.Entries(ctx, observer.EntryFilter{Scopes: []string{f.ka}})
		require.NoError(t, err)
		for _, e := range es {
			want[e.Status]++
		}
		assert.Equal(t, want, info.Entries)
		assert.Equal(t, 1, info.Entries["forgotten"])
		require.NoError(t, eng.WriteFiles(ctx))
	})

	t.Run("Purge", func(t *testing.T) {
		isOther := func(rel string) bool {
			return strings.HasPrefix(rel, "scopes/"+f.ka+"/") || strings.HasPrefix(rel, "log/"+f.ka+"/") ||
				rel == projector.GlobalFile || rel == projector.IndexFile || strings.HasPrefix(rel, "knowledge/")
		}
		others := snapshot(t, f.root, func(rel string) bool { return !isOther(rel) })
		entriesBefore, err := eng.Entries(ctx, observer.EntryFilter{Scopes: []string{f.ka, observer.GlobalStream}})
		require.NoError(t, err)

		_, err = eng.PurgeScope(ctx, observer.GlobalStream, observer.GlobalStream)
		require.ErrorIs(t, err, observer.ErrGlobalScope)
		_, err = eng.PurgeScope(ctx, f.kb, "")
		require.ErrorIs(t, err, observer.ErrPurgeUnconfirmed)
		_, err = eng.PurgeScope(ctx, f.kb, f.ka)
		require.ErrorIs(t, err, observer.ErrPurgeUnconfirmed)
		require.NotEmpty(t, onDisk(t, f.root, f.tokB), "a refused purge removes nothing")

		rep, err := eng.PurgeScope(ctx, f.kb, f.kb)
		require.NoError(t, err)
		assert.Equal(t, f.kb, rep.Key)
		assert.Equal(t, 4, rep.Events, "remember, start, message, summary: %+v", rep)
		assert.Positive(t, rep.Bytes)
		assert.Contains(t, rep.Files, projector.SummaryPath(f.kb))
		assert.Contains(t, rep.Files, projector.DayPath("2026-08-18"))

		require.NoError(t, eng.Store().CheckpointAll(ctx))
		assert.Empty(t, onDisk(t, f.root, f.tokB), "bytes of the purged scope left on disk")
		assert.NotEmpty(t, onDisk(t, f.root, f.tokA), "the other scope")

		after := snapshot(t, f.root, func(rel string) bool { return !isOther(rel) })
		assert.Equal(t, keysOf(others), keysOf(after))
		for rel, b := range others {
			assert.Equal(t, string(b), string(after[rel]), "%s changed with the purge of another scope", rel)
		}
		entriesAfter, err := eng.Entries(ctx, observer.EntryFilter{Scopes: []string{f.ka, observer.GlobalStream}})
		require.NoError(t, err)
		assert.Equal(t, entriesBefore, entriesAfter)
		day, err := os.ReadFile(filepath.Join(f.root, projector.DayPath("2026-08-18")))
		require.NoError(t, err)
		assert.Contains(t, string(day), f.tokA)

		_, err = eng.ScopeKey(f.kb)
		assert.ErrorIs(t, err, observer.ErrUnknownScope)
		evs, err := eng.Store().Events(ctx, sqlstore.EventFilter{Stream: observer.GlobalStream, Type: events.TypeScopePurge})
		require.NoError(t, err)
		require.Len(t, evs, 1)
		assert.JSONEq(t, `{"key":"`+f.kb+`"}`, string(evs[0].Data))
		verifyReplay(t, eng)

		// The directory's next event starts a fresh stream.
		f.ingest(t, `{"id":"s-new:1","type":"user/message","time":"2026-08-18T12:00:00Z","session":"s-new","cwd":"/home/u/beta","data":{"text":"fresh start"}}`)
		assert.EqualValues(t, 1, eng.Log().LastSeq(f.kb))
		verifyReplay(t, eng)
	})
}

func keysOf(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestScopeArchiveMigration: an index at migration 00007 (before the
// recycle bin) whose log holds a scope/archive event comes up archived
// after 00008, its files rendered under archived/ on open, equal to a
// replay.
func TestScopeArchiveMigration(t *testing.T) {
	ctx := context.Background()
	f := newScopeFixture(t)
	_, err := f.eng.ArchiveScope(ctx, f.ka)
	require.NoError(t, err)
	require.NoError(t, f.eng.Close())

	require.NoError(t, sqlstore.MigrateDownTo(filepath.Join(f.root, sqlstore.IndexFile), 7))
	// What a build before 00008 left: the files were never moved.
	require.NoError(t, os.RemoveAll(filepath.Join(f.root, projector.ArchivedDir)))

	eng := openEngine(t, f.root)
	assert.True(t, eng.ScopeArchived(f.ka), "the backfill marks the scope archived")
	assert.False(t, eng.ScopeArchived(f.kb))
	_, err = os.Stat(filepath.Join(f.root, "archived", f.ka, projector.SummaryFile))
	assert.NoError(t, err, "the open renders the archived scope's files")
	verifyReplay(t, eng)
}
