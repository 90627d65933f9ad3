package dsh

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFindSessions(t *testing.T) {
	root := t.TempDir()
	lines := fixtureLines(t, filepath.Join(fixtureDir, "subagent-continuable--session.1.jsonl"))
	mk := func(rel string) string {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		if strings.HasSuffix(p, ".zstd") {
			writeZstdFile(t, filepath.Dir(p), filepath.Base(p), lines, 3)
		} else {
			writeJSONLFile(t, filepath.Dir(p), filepath.Base(p), lines)
		}
		return p
	}
	mk("--home-u-a--/s1/session.jsonl.zstd")
	v2 := mk("--home-u-a--/s1/session.v2.jsonl.zstd")
	mk("--home-u-a--/s2/session.jsonl")
	s2 := mk("--home-u-a--/s2/session.jsonl.zstd") // same generation: zstd wins
	mk("_no-cwd/s3/session.jsonl")
	s3 := mk("_no-cwd/s3/session.1.jsonl")
	flatA := mk("fixtures/a--session.jsonl")
	flatB := mk("fixtures/b--session.1.jsonl")
	mk("fixtures/README.md")

	got, err := FindSessions(root)
	require.NoError(t, err)
	want := []string{v2, s2, s3, flatA, flatB}
	slices.Sort(want)
	require.True(t, reflect.DeepEqual(got, want), "got %v\nwant %v", got, want)

	t.Run("OnlyHighestGeneration", func(t *testing.T) {
		// Make v2 distinguishable: a different header id.
		l2 := append([][]byte{[]byte(strings.Replace(string(lines[0]), "33333333-3333-4333-8333-333333333333", "v2-session", 1))}, lines[1:]...)
		writeZstdFile(t, filepath.Dir(v2), filepath.Base(v2), l2, 3)
		sessions := readTree(t, filepath.Join(root, "--home-u-a--", "s1"))
		require.Len(t, sessions, 1, "got %d sessions (%+v), want only %s", len(sessions), sessionIDs(sessions), v2)
		require.EqualValues(t, "v2-session", sessions[0].ID, "got %d sessions (%+v), want only %s", len(sessions), sessionIDs(sessions), v2)
		require.Equal(t, v2, sessions[0].Path, "got %d sessions (%+v), want only %s", len(sessions), sessionIDs(sessions), v2)
	})
	t.Run("ABadFileStopsOnlyItself", func(t *testing.T) {
		bad := writeRaw(t, filepath.Join(root, "fixtures"), "c--session.jsonl", []byte("not json\n{\"type\":\"session\"}\n"))
		paths, err := FindSessions(root)
		require.NoError(t, err, "got %d paths, %v; want 6, the bad one among them", len(paths), err)
		require.Len(t, paths, 6, "got %d paths, %v; want 6, the bad one among them", len(paths), err)
		read := 0
		for _, p := range paths {
			_, err := ReadFile(p)
			if p != bad {
				assert.NoError(t, err, "ReadFile(%s)", p)
				read++
				continue
			}
			assert.False(t, err == nil || !strings.Contains(err.Error(), "c--session.jsonl"), "ReadFile(%s): got %v, want an error naming c--session.jsonl", p, err)
			var ce *CorruptError
			assert.True(t, errors.As(err, &ce), "got %T, want *CorruptError inside", err)
		}
		assert.EqualValues(t, 5, read, "got %d sessions read, want 5", read)
	})
	t.Run("SingleFile", func(t *testing.T) {
		got, err := FindSessions(flatA)
		require.NoError(t, err, "got %v %v, want [%s]", got, err, flatA)
		require.Len(t, got, 1, "got %v %v, want [%s]", got, err, flatA)
		require.Equal(t, flatA, got[0], "got %v %v, want [%s]", got, err, flatA)
	})
}

func TestReadFixtureTree(t *testing.T) {
	sessions := readTree(t, fixtureDir)
	var names []string
	for _, s := range sessions {
		names = append(names, strings.TrimPrefix(filepath.ToSlash(s.Path), fixtureDir+"/"))
	}
	want := []string{
		"advanced-toolchain--session.jsonl",
		"compaction-recovery--session.jsonl",
		"goal-multi-turn-actions--session.jsonl",
		"live/--tmp-dshlive-proj--/session-f89a0fe3-a8e2-43d3-89fc-ea47ed224b68/session.jsonl.zstd",
		"permission-policy-context--session.jsonl",
		"subagent-continuable--session.1.jsonl",
	}
	require.True(t, reflect.DeepEqual(names, want), "got %v\nwant %v", names, want)
}

func sessionIDs(ss []Session) []string {
	var ids []string
	for _, s := range ss {
		ids = append(ids, s.ID)
	}
	return ids
}
