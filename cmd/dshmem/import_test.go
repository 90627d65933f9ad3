package main

import (
	"dshmem/observer/importer"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	dshFixtureDir = "../../testdata/dsh-sessions"
	legacyMD      = "../../testdata/legacy/dsh-memory"
	legacyWS      = "../../testdata/legacy/dsh-workspace-memory"
)

var summaryRE = regexp.MustCompile(`(?m)^imported (\d+) files \((\d+) unreadable\): (\d+) events, (\d+) appended, (\d+) duplicates, (\d+) rejected; skipped \d+, unknown \d+; torn \d+ bytes$`)

func TestImportDSHCommand(t *testing.T) {
	root := t.TempDir()
	var events, appended string
	t.Run("OK", func(t *testing.T) {
		code, out, errs := cli(t, "", "--root", root, "import", "dsh", dshFixtureDir)
		require.EqualValues(t, 0, code, "exit %d, stderr %s", code, errs)
		m := summaryRE.FindStringSubmatch(out)
		require.NotNil(t, m, "no summary line in:\n%s", out)
		// Three fixtures share the placeholder session id {{sessionId}}:
		// the session/start headers of the second and third are other
		// events under the first one's header id, and are refused.
		const want = "want 6 files, 0 unreadable, some appended, 2 rejected"
		require.EqualValues(t, "6", m[1], "got summary %q, %s", m[0], want)
		require.EqualValues(t, "0", m[2], "got summary %q, %s", m[0], want)
		require.EqualValues(t, "2", m[6], "got summary %q, %s", m[0], want)
		require.NotEqualValues(t, "0", m[4], "got summary %q, %s", m[0], want)
		assert.Contains(t, out, `"dsh:{{sessionId}}:header" is already the id of another event`)
		events, appended = m[3], m[4]
		for _, want := range []string{
			"advanced-toolchain--session.jsonl (session 11111111-1111-4111-8111-111111111111) → global:",
			"skipped ",
			`note: cwd "{{cwd}}" is not an absolute path`,
			"already read from",
			"(session session-f89a0fe3-a8e2-43d3-89fc-ea47ed224b68) → ws-",
		} {
			assert.Contains(t, out, want, "output lacks %q:\n%s", want, out)
		}
	})
	t.Run("ReimportAppendsNothing", func(t *testing.T) {
		code, out, errs := cli(t, "", "--root", root, "import", "dsh", dshFixtureDir)
		require.EqualValues(t, 0, code, "exit %d, stderr %s", code, errs)
		m := summaryRE.FindStringSubmatch(out)
		require.NotNil(t, m, "got summary %q, want %s events, 0 appended, %s duplicates", m, events, events)
		require.Equal(t, events, m[3], "got summary %q, want %s events, 0 appended, %s duplicates", m, events, appended)
		require.EqualValues(t, "0", m[4], "got summary %q, want %s events, 0 appended, %s duplicates", m, events, appended)
		require.Equal(t, appended, m[5], "got summary %q, want %s events, 0 appended, %s duplicates", m, events, appended)
	})
	t.Run("OneFileJSON", func(t *testing.T) {
		f := filepath.Join(dshFixtureDir, "subagent-continuable--session.1.jsonl")
		code, out, errs := cli(t, "", "--root", root, "import", "--json", "dsh", f)
		require.EqualValues(t, 0, code, "exit %d, stderr %s", code, errs)
		var rep importer.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		require.EqualValues(t, "dsh", rep.Kind, "got %+v, want one already-imported sub-agent session", rep)
		require.Len(t, rep.Files, 1, "got %+v, want one already-imported sub-agent session", rep)
		require.EqualValues(t, "33333333-3333-4333-8333-333333333333", rep.Files[0].Session, "got %+v, want one already-imported sub-agent session", rep)
		require.EqualValues(t, 0, rep.Total.Appended, "got %+v, want one already-imported sub-agent session", rep)
	})
	t.Run("MissingPath", func(t *testing.T) {
		code, _, errs := cli(t, "", "--root", root, "import", "dsh", "/nonexistent/sessions")
		require.EqualValues(t, 1, code, "exit %d, stderr %s", code, errs)
		require.Contains(t, errs, "/nonexistent/sessions does not exist", "exit %d, stderr %s", code, errs)
	})
	t.Run("NothingToImport", func(t *testing.T) {
		code, _, errs := cli(t, "", "--root", root, "import", "dsh", t.TempDir())
		require.EqualValues(t, 1, code, "exit %d, stderr %s", code, errs)
		require.Contains(t, errs, "no DSH session log", "exit %d, stderr %s", code, errs)
	})
}

func TestImportUsage(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"NoKind", []string{"import"}, "say what to import"},
		{"UnknownKind", []string{"import", "sqlite", "x"}, `unknown kind "sqlite"`},
		{"NoPath", []string{"import", "dsh"}, "exactly one PATH"},
		{"TwoPaths", []string{"import", "legacy", "a", "b"}, "exactly one PATH"},
		{"BadBatch", []string{"import", "--batch", "0", "dsh", "x"}, "--batch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := cli(t, "", append([]string{"--root", root}, tc.args...)...)
			require.EqualValues(t, 2, code, "exit %d, stderr %s; want 2 and %q", code, errs, tc.want)
			require.Contains(t, errs, tc.want, "exit %d, stderr %s; want 2 and %q", code, errs, tc.want)
			require.Contains(t, errs, "usage: dshmem [--root DIR] import", "exit %d, stderr %s; want 2 and %q", code, errs, tc.want)
		})
	}
	// A directory that holds nothing to import is one error line: no
	// summary of zero files on stdout.
	t.Run("NothingToImport", func(t *testing.T) {
		d := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(d, "a.txt"), []byte("hi"), 0o600))
		for _, kind := range []string{"dsh", "legacy"} {
			code, out, errs := cli(t, "", "--root", root, "import", kind, d)
			require.EqualValues(t, 1, code, "%s: exit %d, stderr %s", kind, code, errs)
			assert.Empty(t, out, kind)
			assert.Equal(t, 1, strings.Count(errs, "\n"), "%s: %s", kind, errs)
			assert.Contains(t, errs, "dshmem import: import "+kind+" "+d+": nothing to import: ")
		}
	})
	t.Run("Help", func(t *testing.T) {
		code, out, _ := cli(t, "", "import", "--help")
		require.EqualValues(t, 0, code, "exit %d, out %s", code, out)
		require.Contains(t, out, "dsh-workspace-memory", "exit %d, out %s", code, out)
	})
}

func TestImportLegacyCommand(t *testing.T) {
	root := t.TempDir()
	for _, tree := range []string{legacyMD, legacyWS} {
		code, out, errs := cli(t, "", "--root", root, "import", "legacy", tree)
		require.EqualValues(t, 0, code, "%s: exit %d, stderr %s", tree, code, errs)
		m := summaryRE.FindStringSubmatch(out)
		require.NotNil(t, m, "%s: got summary %q, want every event appended:\n%s", tree, m, out)
		require.EqualValues(t, "0", m[2], "%s: got summary %q, want every event appended:\n%s", tree, m, out)
		require.NotEqualValues(t, "0", m[4], "%s: got summary %q, want every event appended:\n%s", tree, m, out)
		require.Equal(t, m[3], m[4], "%s: got summary %q, want every event appended:\n%s", tree, m, out)
		code, out, _ = cli(t, "", "--root", root, "import", "legacy", tree)
		if m := summaryRE.FindStringSubmatch(out); code != 0 || m == nil || m[4] != "0" {
			t.Fatalf("%s: re-import exit %d, got %q, want 0 appended", tree, code, m)
		}
	}
	code, out, _ := cli(t, "", "--root", root, "import", "legacy", legacyWS)
	for _, want := range []string{"layouts: dsh-workspace-memory", "scopes/ws-9c09f8055a26c27736dd/memory_entries.json → ws-9c09f8055a26c27736dd:", "tagged conflict:<group>"} {
		assert.False(t, code != 0 || !strings.Contains(out, want), "output lacks %q:\n%s", want, out)
	}
	t.Run("NotATree", func(t *testing.T) {
		code, _, errs := cli(t, "", "--root", root, "import", "legacy", t.TempDir())
		require.EqualValues(t, 1, code, "exit %d, stderr %s", code, errs)
		require.Contains(t, errs, "neither a dsh-memory tree", "exit %d, stderr %s", code, errs)
	})
}
