package main

import (
	"dshmem/observer/importer"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const (
	dshFixtureDir = "../../testdata/dsh-sessions"
	legacyMD      = "../../testdata/legacy/dsh-memory"
	legacyWS      = "../../testdata/legacy/dsh-workspace-memory"
)

var summaryRE = regexp.MustCompile(`(?m)^imported (\d+) files \((\d+) unreadable\): (\d+) events, (\d+) appended, (\d+) duplicates, (\d+) rejected; skipped \d+, unknown \d+; torn \d+ bytes$`)

func TestImportDSHCommand(t *testing.T) {
	root := t.TempDir()
	var events string
	t.Run("OK", func(t *testing.T) {
		code, out, errs := cli(t, "", "--root", root, "import", "dsh", dshFixtureDir)
		if code != 0 {
			t.Fatalf("exit %d, stderr %s", code, errs)
		}
		m := summaryRE.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no summary line in:\n%s", out)
		}
		if m[1] != "6" || m[2] != "0" || m[6] != "0" || m[4] == "0" {
			t.Fatalf("got summary %q, want 6 files, 0 unreadable, some appended, 0 rejected", m[0])
		}
		events = m[3]
		for _, want := range []string{
			"advanced-toolchain--session.jsonl (session 11111111-1111-4111-8111-111111111111) → global:",
			"skipped ",
			`note: cwd "{{cwd}}" is not an absolute path`,
			"already read from",
			"(session session-f89a0fe3-a8e2-43d3-89fc-ea47ed224b68) → ws-",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("ReimportAppendsNothing", func(t *testing.T) {
		code, out, errs := cli(t, "", "--root", root, "import", "dsh", dshFixtureDir)
		if code != 0 {
			t.Fatalf("exit %d, stderr %s", code, errs)
		}
		m := summaryRE.FindStringSubmatch(out)
		if m == nil || m[3] != events || m[4] != "0" || m[5] != events {
			t.Fatalf("got summary %q, want %s events, 0 appended, %s duplicates", m, events, events)
		}
	})
	t.Run("OneFileJSON", func(t *testing.T) {
		f := filepath.Join(dshFixtureDir, "subagent-continuable--session.1.jsonl")
		code, out, errs := cli(t, "", "--root", root, "import", "--json", "dsh", f)
		if code != 0 {
			t.Fatalf("exit %d, stderr %s", code, errs)
		}
		var rep importer.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if rep.Kind != "dsh" || len(rep.Files) != 1 || rep.Files[0].Session != "33333333-3333-4333-8333-333333333333" || rep.Total.Appended != 0 {
			t.Fatalf("got %+v, want one already-imported sub-agent session", rep)
		}
	})
	t.Run("MissingPath", func(t *testing.T) {
		code, _, errs := cli(t, "", "--root", root, "import", "dsh", "/nonexistent/sessions")
		if code != 1 || !strings.Contains(errs, "/nonexistent/sessions does not exist") {
			t.Fatalf("exit %d, stderr %s", code, errs)
		}
	})
	t.Run("NothingToImport", func(t *testing.T) {
		code, _, errs := cli(t, "", "--root", root, "import", "dsh", t.TempDir())
		if code != 1 || !strings.Contains(errs, "no DSH session log") {
			t.Fatalf("exit %d, stderr %s", code, errs)
		}
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
			if code != 2 || !strings.Contains(errs, tc.want) || !strings.Contains(errs, "usage: dshmem [--root DIR] import") {
				t.Fatalf("exit %d, stderr %s; want 2 and %q", code, errs, tc.want)
			}
		})
	}
	t.Run("Help", func(t *testing.T) {
		code, out, _ := cli(t, "", "import", "--help")
		if code != 0 || !strings.Contains(out, "dsh-workspace-memory") {
			t.Fatalf("exit %d, out %s", code, out)
		}
	})
}

func TestImportLegacyCommand(t *testing.T) {
	root := t.TempDir()
	for _, tree := range []string{legacyMD, legacyWS} {
		code, out, errs := cli(t, "", "--root", root, "import", "legacy", tree)
		if code != 0 {
			t.Fatalf("%s: exit %d, stderr %s", tree, code, errs)
		}
		m := summaryRE.FindStringSubmatch(out)
		if m == nil || m[2] != "0" || m[4] == "0" || m[4] != m[3] {
			t.Fatalf("%s: got summary %q, want every event appended:\n%s", tree, m, out)
		}
		code, out, _ = cli(t, "", "--root", root, "import", "legacy", tree)
		if m := summaryRE.FindStringSubmatch(out); code != 0 || m == nil || m[4] != "0" {
			t.Fatalf("%s: re-import exit %d, got %q, want 0 appended", tree, code, m)
		}
	}
	code, out, _ := cli(t, "", "--root", root, "import", "legacy", legacyWS)
	for _, want := range []string{"layouts: dsh-workspace-memory", "scopes/ws-9c09f8055a26c27736dd/memory_entries.json → ws-9c09f8055a26c27736dd:", "tagged conflict:<group>"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	t.Run("NotATree", func(t *testing.T) {
		code, _, errs := cli(t, "", "--root", root, "import", "legacy", t.TempDir())
		if code != 1 || !strings.Contains(errs, "neither a dsh-memory tree") {
			t.Fatalf("exit %d, stderr %s", code, errs)
		}
	})
}
