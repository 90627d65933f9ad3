package plugin

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/merge")

var testEntry = Entry{
	Name:   "/home/u/.dsh/dshmem/plugin.mjs",
	Config: Config{Binary: "/home/u/bin/dshmem", Root: "/home/u/.dsh/memory", DSHHome: "/home/u/.dsh"},
}

// golden compares got with testdata/merge/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "merge", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "%v (run go test -update to write it)", err)
	assert.Equal(t, want, got, "%s: got\n%s\nwant\n%s", name, got, want)
}

func readInput(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "merge", name+".yml"))
	require.NoError(t, err)
	return b
}

// TestMergeRow installs into each file, installs again, uninstalls, and
// checks every step's bytes.
func TestMergeRow(t *testing.T) {
	for _, tc := range []struct {
		name     string
		action   Action
		line     int  // of our row in the new file
		disabled int  // line that keeps our entry off, 0 when on
		restores bool // uninstall gives back the input byte for byte
		patches  []int
		dropped  []string
	}{
		{name: "empty", action: Added, line: 2},
		{name: "comments-only", action: Added, line: 4},
		{name: "empty-flow", action: Added, line: 3},
		{name: "other-rows", action: Added, line: 18, restores: true},
		{name: "no-final-newline", action: Added, line: 5},
		{name: "old-row", action: Replaced, line: 6},
		{name: "disabled", action: Replaced, line: 4, disabled: 7, dropped: []string{"config.extra"}},
		{name: "patch-row", action: Added, line: 5, disabled: 14, restores: true, patches: []int{13}},
		{name: "indented", action: Added, line: 5, restores: true},
		{name: "crlf", action: Added, line: 5, restores: true},
		{name: "flow-rows", action: Added, line: 1, restores: true},
		{name: "flow-old-row", action: Replaced, line: 5},
		{name: "flow-patch-row", action: Added, line: 1, disabled: 1, restores: true, patches: []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := readInput(t, tc.name)
			ed, err := MergeRow(src, testEntry)
			require.NoError(t, err)
			assert.False(t, ed.Action != tc.action || ed.Line != tc.line || ed.DisabledAt != tc.disabled, "got %s at line %d, disabled at %d; want %s at line %d, disabled at %d", ed.Action, ed.Line, ed.DisabledAt, tc.action, tc.line, tc.disabled)
			assert.True(t, slices.Equal(ed.Dropped, tc.dropped), "dropped: got %v, want %v", ed.Dropped, tc.dropped)
			golden(t, tc.name+".installed", ed.Text)
			installed := ed.Text

			t.Run("Idempotent", func(t *testing.T) {
				again, err := MergeRow(installed, testEntry)
				require.NoError(t, err)
				assert.False(t, again.Action != Unchanged || !bytes.Equal(again.Text, installed) || again.Line != tc.line, "second install: got %s at line %d, want unchanged at line %d, bytes equal %v", again.Action, again.Line, tc.line, bytes.Equal(again.Text, installed))
				e, insp, err := Inspect(installed)
				require.NoError(t, err, "inspect: %v, %v", e, err)
				require.NotNil(t, e, "inspect: %v, %v", e, err)
				want := testEntry
				want.Disabled = tc.name == "disabled"
				assert.False(t, *e != want || insp.Line != tc.line || insp.DisabledAt != tc.disabled || !slices.Equal(insp.Patches, tc.patches), "inspect: got %+v at line %d, disabled at %d, patches %v; want %+v at %d, %d, %v", *e, insp.Line, insp.DisabledAt, insp.Patches, want, tc.line, tc.disabled, tc.patches)
			})
			t.Run("Uninstall", func(t *testing.T) {
				rm, err := RemoveRow(installed)
				require.NoError(t, err)
				assert.False(t, rm.Action != Removed || rm.Line != tc.line, "got %s at line %d, want removed at line %d", rm.Action, rm.Line, tc.line)
				if rm.Delete {
					require.Len(t, bytes.TrimSpace(src), 0, "uninstall deletes a file that had more than our row")
					return
				}
				if tc.restores && !bytes.Equal(rm.Text, src) {
					t.Errorf("uninstall: got\n%s\nwant the input back\n%s", rm.Text, src)
				}
				golden(t, tc.name+".uninstalled", rm.Text)
				gone, err := RemoveRow(rm.Text)
				assert.False(t, err != nil || gone.Action != Absent || !bytes.Equal(gone.Text, rm.Text), "second uninstall: got %s, %v; want absent, bytes unchanged", gone.Action, err)
			})
		})
	}
}

// TestMergeRowRefused: files the host would refuse, or that cannot be
// edited without touching other rows, are refused with their line.
func TestMergeRowRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		line int
		msg  string
	}{
		{"malformed", 3, "not valid YAML"}, // where the unclosed [ starts,
		{"not-sequence", 2, "the top level is a mapping, not a sequence"},
		{"duplicate", 5, "first is at line 1"},
		{"shared-insert", 4, "shares this insert list"},
		{"nested", 5, "inside another entry"},
		{"repeated-key", 3, `key "config" is repeated (first at line 2)`},
		{"two-documents", 2, "a second YAML document"},
		{"scalar-row", 2, "row 2 is a scalar"},
		{"bad-tab", 2, "not valid YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := readInput(t, tc.name)
			for verb, f := range map[string]func([]byte) (Edit, error){
				"install":   func(b []byte) (Edit, error) { return MergeRow(b, testEntry) },
				"uninstall": RemoveRow,
			} {
				_, err := f(src)
				var pe *PatchError
				require.True(t, errors.As(err, &pe), "%s: got %v, want a *PatchError", verb, err)
				assert.False(t, pe.Line != tc.line || !strings.Contains(pe.Msg, tc.msg), "%s: got line %d %q, want line %d containing %q", verb, pe.Line, pe.Msg, tc.line, tc.msg)
			}
		})
	}
}

// TestQuote: any path comes back from the file as it went in.
func TestQuote(t *testing.T) {
	for _, p := range []string{
		"/home/u/My Stuff/dshmem",
		"/tmp/a: b/#c/dshmem",
		"/home/用户/记忆/dshmem",
		`/odd/"quoted"/back\slash`,
		"/tab\there/and\nnewline",
		"C:\\Users\\Ana María\\.dsh",
		"/true", "/-x", "/x #y", "/x:y",
	} {
		e := testEntry
		e.Config.Binary, e.Config.Root, e.Name = p, p+"/memory", p+"/plugin.mjs"
		ed, err := MergeRow(nil, e)
		require.NoError(t, err, "%q", p)
		got, _, err := Inspect(ed.Text)
		assert.False(t, err != nil || got == nil || *got != e, "%q: got %+v, %v; want %+v\n%s", p, got, err, e, ed.Text)
		ed, err = MergeRow([]byte("[ {id: shell} ]\n"), e) // in a flow row too
		require.NoError(t, err, "%q in a flow sequence", p)
		if got, _, err := Inspect(ed.Text); err != nil || got == nil || *got != e {
			t.Errorf("%q in a flow sequence: got %+v, %v; want %+v\n%s", p, got, err, e, ed.Text)
		}
	}
	_, err := quote("/bad\xff")
	assert.Error(t, err, "invalid UTF-8: got no error")
}

func TestVersion(t *testing.T) {
	// The version comes from the real embedded file.
	disk, err := os.ReadFile("plugin.mjs")
	require.NoError(t, err)
	require.Equal(t, Source(), disk, "Source() is not plugin.mjs")
	v := Version()
	require.NotEqualValues(t, "", v, "got version %q, not the one plugin.mjs declares", v)
	require.Contains(t, string(Source()), string([]byte("export const version = '"+v+"'")), "got version %q, not the one plugin.mjs declares", v)
	for src, want := range map[string]string{
		"export const version = '3';\n":           "3",
		"// x\nexport const version = \"1.2.0\";": "1.2.0",
		"export const name = 'x';\n":              "",
		"  export const version = '9';":           "",
	} {
		got := VersionOf([]byte(src))
		assert.Equal(t, want, got, "VersionOf(%q): got %q, want %q", src, got, want)
	}
}

// FuzzMergeRow: whatever the file, an install either refuses it or
// yields a file that holds our entry, installs again to the same bytes,
// and uninstalls to one without it.
func FuzzMergeRow(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "merge", "*.yml"))
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		ed, err := MergeRow(src, testEntry)
		if err != nil {
			return
		}
		e, _, err := Inspect(ed.Text)
		if err != nil || e == nil || e.Name != testEntry.Name || e.Config != testEntry.Config {
			t.Fatalf("installed file: got %+v, %v\n%s", e, err, ed.Text)
		}
		again, err := MergeRow(ed.Text, testEntry)
		if err != nil || again.Action != Unchanged {
			t.Fatalf("second install: got %s, %v\n%s", again.Action, err, ed.Text)
		}
		rm, err := RemoveRow(ed.Text)
		if err != nil || rm.Action != Removed {
			t.Fatalf("uninstall: got %s, %v\n%s", rm.Action, err, ed.Text)
		}
		if !rm.Delete {
			if e, _, err := Inspect(rm.Text); err != nil || e != nil {
				t.Fatalf("uninstalled file: got %+v, %v\n%s", e, err, rm.Text)
			}
		}
	})
}

// TestYAMLErrorLines: yaml/v3 counts some lines from 0 and points some
// errors before their place; the line reported is where the fault is.
func TestYAMLErrorLines(t *testing.T) {
	for src, want := range map[string]int{
		"- a: 1\n- b: \"unterminated\n- c: 2\n": 2, // where the string starts
		"- a: 1\n- b: 2\n  c: 3\n d: 4\n":       4,
		"- a: 1\n- b: 2\n- c: 3\n\t- d: 4\n":    4,
		"- a: 1\n- @b\n":                        2,
		"- a: 1\n- b: c: d\n":                   2,
		"- a: 1\n- b: 2\n- c: [1, 2\n- d: 3\n":  3, // where the [ opens
		"- a: 1\n- &x {b: 2}\n- *y\n":           3,
		"- [\n":                                 1, // not the line after the end
	} {
		_, err := parsePatch([]byte(src))
		var pe *PatchError
		assert.False(t, !errors.As(err, &pe) || pe.Line != want, "%q: got %v, want line %d", src, err, want)
	}
}
