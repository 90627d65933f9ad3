package observer_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/observer"
	"dshmem/observer/internal/enginetest"
	"dshmem/projector"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestResolver(t *testing.T) {
	base := filepath.ToSlash(t.TempDir())
	home := base + "/home/u"
	enginetest.Mkdirs(t, base,
		"home/u/.git",                 // a dotfiles repository at home
		"home/.git",                   // and a repository above it
		"home/u/proj/.git",            // a repository
		"home/u/proj/src/deep/er",     // inside it
		"home/u/proj/vendor/lib/.git", // a repository nested in it
		"home/u/proj/vendor/lib/x",    //
		"home/u/wt/.git-file",         // a worktree: .git is a file
		"home/u/wt/pkg",               //
		"home/u/notes/a/b",            // no repository; notes is a scope
		"home/u/loose/a",              // no repository, no scope
		"home/u/work/repo/.git",       // a repository below a scope (work)
		"home/u/work/repo/cmd",        //
		"home/u/work/plain/dir",       // no repository below the scope work
		"home/u/proj2/.git",           // a repository whose subdirectory
		"home/u/proj2/old/sub",        // old was a scope before this rule
		"srv/svc/a",                   // outside home, / is a scope
	)
	ws := observer.StreamForCwd
	known := map[string]bool{
		ws(home + "/notes"):     true,
		ws(home + "/work"):      true,
		ws(home + "/proj2/old"): true,
		ws(home):                true,
		ws(base + "/home"):      true, // a scope above home: never home's
		ws("/"):                 true,
	}
	r := observer.Resolver{Known: func(s string) bool { return known[s] }, Home: home}
	tests := []struct {
		name, cwd, want string
	}{
		{"RepoRootIsItsOwnScope", home + "/proj", home + "/proj"},
		{"SubdirectoryReachesRepoRoot", home + "/proj/src/deep/er", home + "/proj"},
		{"TrailingSlashAndDots", home + "/proj/src/../src/deep/", home + "/proj"},
		{"NearestRepositoryWins", home + "/proj/vendor/lib/x", home + "/proj/vendor/lib"},
		{"WorktreeGitFile", home + "/wt/pkg", home + "/wt"},
		{"AncestorScopeWithoutGit", home + "/notes/a/b", home + "/notes"},
		{"NoScopeNoRepoIsItself", home + "/loose/a", home + "/loose/a"},
		{"ScopeAboveRepoDoesNotCapture", home + "/work/repo/cmd", home + "/work/repo"},
		{"ScopeAboveWithoutRepoCaptures", home + "/work/plain/dir", home + "/work"},
		{"ExistingScopeInsideRepoKeepsItsKey", home + "/proj2/old", home + "/proj2/old"},
		{"BelowExistingScopeInsideRepo", home + "/proj2/old/sub", home + "/proj2/old"},
		{"HomeIsItsOwnScope", home, home},
		{"HomeScopeAndDotfilesRepoDoNotCapture", home + "/loose", home + "/loose"},
		{"RootIsItsOwnScope", "/", "/"},
		{"RootScopeDoesNotCapture", base + "/srv/svc/a", base + "/srv/svc/a"},
		{"MissingDirectoryStillWalks", home + "/proj/not/there", home + "/proj"},
		{"WindowsPathIsItself", `C:\Users\U\proj\src`, "c:/users/u/proj/src"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.Resolve(tt.cwd)
			require.Equal(t, tt.want, got.Dir, "Resolve(%q) = %+v, want %s (%s)", tt.cwd, got, tt.want, ws(tt.want))
			require.Equal(t, ws(tt.want), got.Stream, "Resolve(%q) = %+v, want %s (%s)", tt.cwd, got, tt.want, ws(tt.want))
		})
	}
	t.Run("HomeNotCapturedFromAbove", func(t *testing.T) {
		// Home is not a scope yet; a scope and a repository above it
		// still do not take it.
		r := observer.Resolver{Known: func(s string) bool { return s == ws(base+"/home") }, Home: home}
		got := r.Resolve(home)
		require.Equal(t, home, got.Dir, "Resolve(home) = %+v, want home itself", got)
		if got := r.Resolve(home + "/loose/a"); got.Dir != home+"/loose/a" {
			t.Fatalf("Resolve(home/loose/a) = %+v, want itself", got)
		}
	})
	t.Run("GlobalForNoCwd", func(t *testing.T) {
		got := r.Resolve("")
		require.Equal(t, (observer.Scope{Stream: observer.GlobalStream}), got, "got %+v, want the global scope", got)
	})
	t.Run("KnownWindowsScopeKeepsItsKey", func(t *testing.T) {
		r := observer.Resolver{Known: func(s string) bool { return s == ws("c:/users/u/proj") }, Home: home}
		got := r.Resolve(`C:\Users\U\Proj`)
		require.Equal(t, ws("c:/users/u/proj"), got.Stream, "got %+v", got)
		// Not local: no ancestor is looked at.
		if got := r.Resolve(`C:\Users\U\Proj\src`); got.Dir != "c:/users/u/proj/src" {
			t.Fatalf("got %+v, want the cwd itself", got)
		}
	})
	t.Run("String", func(t *testing.T) {
		s := r.Resolve(home + "/proj/src")
		got, want := s.String(), home+"/proj ("+ws(home+"/proj")+")"
		require.Equal(t, want, got, "got %q, want %q", got, want)
	})
}

// scopeJSONOf reads scopes/<stream>/scope.json under root.
func scopeJSONOf(t *testing.T, eng *observer.Engine, stream string) scopeFile {
	t.Helper()
	// The Markdown files are written in the background after a fold.
	require.NoError(t, eng.WriteFiles(context.Background()))
	b, err := os.ReadFile(filepath.Join(eng.Root(), filepath.FromSlash(projector.ScopePath(stream))))
	require.NoError(t, err)
	var sj scopeFile
	require.NoError(t, json.Unmarshal(b, &sj), "scope.json: %v\n%s", err, b)
	return sj
}

type scopeFile struct{ Key, Cwd string }

func TestSubdirectoryReachesProject(t *testing.T) {
	ctx := context.Background()
	base := filepath.ToSlash(t.TempDir())
	proj := base + "/proj"
	enginetest.Mkdirs(t, base, "proj/.git", "proj/cmd/tool", "notes/a")
	root := t.TempDir()
	eng := enginetest.Open(t, root)
	pstream := observer.StreamForCwd(proj)

	t.Run("FirstSessionInSubdirectory", func(t *testing.T) {
		// The project's first session starts in a subdirectory: the
		// stream is the repository's, the events keep their real cwd, and
		// scope.json records the repository root.
		enginetest.Ingest(t, eng, enginetest.Conv("s1", proj+"/cmd/tool", "remember that we deploy with helm"))
		got := eng.Log().Streams()
		require.Len(t, got, 1, "streams %v, want only %s", got, pstream)
		require.Equal(t, pstream, got[0], "streams %v, want only %s", got, pstream)
		var cwds []string
		eng.Log().Scan(pstream, 1, func(ev events.Envelope) error {
			cwds = append(cwds, ev.Type+"@"+ev.Cwd)
			return nil
		})
		want := []string{"scope/register@" + proj, "session/start@" + proj + "/cmd/tool", "user/message@", "assistant/message@"}
		require.Equal(t, strings.Join(want, " "), strings.Join(cwds, " "), "log holds %v, want %v", cwds, want)
		sj := scopeJSONOf(t, eng, pstream)
		require.Equal(t, pstream, sj.Key, "scope.json = %+v, want key %s cwd %s", sj, pstream, proj)
		require.Equal(t, proj, sj.Cwd, "scope.json = %+v, want key %s cwd %s", sj, pstream, proj)
		c, ok, _ := eng.Store().SessionCwd(ctx, "s1")
		assert.False(t, !ok || c != proj+"/cmd/tool", "session cwd %q, want the real one", c)
	})
	t.Run("RememberFromSubdirectory", func(t *testing.T) {
		en, err := eng.Remember(ctx, observer.RememberRequest{Cwd: proj + "/cmd", Content: "Releases are tagged vX.Y.Z", Time: wsT0})
		require.NoError(t, err, "got %+v, %v; want an entry of %s", en, err, pstream)
		require.Equal(t, pstream, en.Scope, "got %+v, %v; want an entry of %s", en, err, pstream)
		got := eng.Scope(proj + "/cmd/tool/")
		require.Equal(t, pstream, got.Stream, "Scope = %+v", got)
		require.Equal(t, proj, got.Dir, "Scope = %+v", got)
	})
	t.Run("ExistingScopeWithoutGit", func(t *testing.T) {
		enginetest.Ingest(t, eng, enginetest.Conv("s2", base+"/notes", "notes"))
		enginetest.Ingest(t, eng, enginetest.Conv("s3", base+"/notes/a", "more notes"))
		got, _, _ := eng.Store().SessionCwd(ctx, "s3")
		require.Equal(t, base+"/notes/a", got, "session cwd %q", got)
		n := observer.StreamForCwd(base + "/notes")
		require.EqualValues(t, 0, eng.Log().LastSeq(observer.StreamForCwd(base+"/notes/a")), "notes/a got a stream of its own, or notes lacks its events: %v", eng.Log().Streams())
		require.EqualValues(t, 6, eng.Log().LastSeq(n), "notes/a got a stream of its own, or notes lacks its events: %v", eng.Log().Streams())
		// The first event named the directory: no scope/register.
		sj := scopeJSONOf(t, eng, n)
		require.Equal(t, base+"/notes", sj.Cwd, "scope.json = %+v", sj)
	})
	t.Run("OwnScopeKeepsItsKey", func(t *testing.T) {
		// A scope made before the repository existed above it stays.
		enginetest.Mkdirs(t, base, "later/sub")
		sub := base + "/later/sub"
		enginetest.Ingest(t, eng, enginetest.Conv("s4", sub, "before git init"))
		enginetest.Mkdirs(t, base, "later/.git")
		enginetest.Ingest(t, eng, enginetest.Conv("s5", sub, "after git init"))
		enginetest.Ingest(t, eng, enginetest.Conv("s6", base+"/later", "at the root"))
		got := eng.Log().LastSeq(observer.StreamForCwd(sub))
		require.EqualValues(t, 6, got, "stream of %s ends at %d, want 6", sub, got)
		if got := eng.Log().LastSeq(observer.StreamForCwd(base + "/later")); got != 3 {
			t.Fatalf("stream of the repository root ends at %d, want 3", got)
		}
	})
	t.Run("SameCallCreatesAndReuses", func(t *testing.T) {
		// Two sessions in one call, the second in a subdirectory of the
		// first (no repository): both land in the first's new scope.
		enginetest.Mkdirs(t, base, "fresh/x")
		lines := append(enginetest.Conv("s7", base+"/fresh", "one"), enginetest.Conv("s8", base+"/fresh/x", "two")...)
		enginetest.Ingest(t, eng, lines)
		got := eng.Log().LastSeq(observer.StreamForCwd(base + "/fresh"))
		require.EqualValues(t, 6, got, "got seq %d, want 6 events in the scope of fresh", got)
	})
	t.Run("ReplayEqualsLive", func(t *testing.T) {
		live, fresh := enginetest.IndexDumps(t, eng)
		require.Equal(t, string(fresh), string(live), "live index differs from a fold of the log:\nlive\n%s\nfresh\n%s", live, fresh)
	})
	t.Run("ReadOnlyEngineResolvesAlike", func(t *testing.T) {
		ro, err := observer.Open(ctx, root, observer.Options{ReadOnly: true})
		require.NoError(t, err)
		defer ro.Close()
		for _, cwd := range []string{proj + "/cmd/tool", base + "/notes/a", base + "/later/sub"} {
			got, want := ro.Scope(cwd), eng.Scope(cwd)
			assert.Equal(t, want, got, "read-only Scope(%s) = %+v, want %+v", cwd, got, want)
		}
		got := ro.ScopeDir(pstream)
		assert.Equal(t, proj, got, "ScopeDir = %q, want %q", got, proj)
	})
}

var wsT0 = time.Date(2026, 8, 18, 10, 0, 0, 0, time.UTC)
