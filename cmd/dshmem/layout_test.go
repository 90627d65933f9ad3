package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// layers says which packages of ours each package may import (README,
// Layout); "x/..." means x and every package under it. Imports point one way, so each package can
// be read and tested alone.
var layers = []struct {
	pkg   string
	allow []string
}{
	{"events", nil},
	{"events/payload", []string{"events"}},
	{"markdown", nil},
	{"migrations", nil},
	{"sqlstore", []string{"events/...", "migrations", "markdown", "sqlstore/..."}},
	{"sqlstore/tokenize", nil},
	{"sqlstore/wordfreq", nil},
	{"sqlstore/zhdict", []string{"sqlstore/wordfreq"}},
	{"sqlstore/enfreq", []string{"sqlstore/wordfreq"}},
	{"sqlstore/encoder", nil},
	// The encoder's vectors of the index's text: the fill and the scan.
	{"sqlstore/vectors", []string{"events/...", "sqlstore", "sqlstore/encoder"}},
	// The MADial harness folds memories as ingest does, so it takes the
	// projector; nothing of the engine imports it.
	{"sqlstore/madial", []string{"events/...", "projector", "sqlstore/...", "markdown"}},
	// Shared by sqlstore's tests; it folds its fixture with the projector.
	{"sqlstore/internal/storetest", []string{"events/...", "projector", "sqlstore"}},
	{"sqlstore/recall", []string{"events/...", "sqlstore/...", "markdown"}},
	{"projector", []string{"events/...", "markdown", "sqlstore/..."}},
	{"replay", []string{"events/...", "markdown", "projector", "sqlstore/..."}},
	// observer's leaves (the host log reader, the distillers) import no
	// part of the engine, so the engine may use them.
	{"observer/dsh", []string{"events/..."}},
	{"observer/distill", []string{"events/...", "sqlstore/tokenize"}},
	// The distillation benchmark: the corpus, the scoring, the replay server.
	{"observer/distill/distilleval", []string{"events/...", "observer/distill"}},
	{"observer/secretrules", nil},
	{"observer", []string{"events/...", "markdown", "projector", "sqlstore/...", "observer/distill", "observer/dsh", "observer/secretrules"}},
	{"observer/metrics", nil},
	{"observer/broker", []string{"events/...", "markdown", "projector", "sqlstore/...", "observer", "observer/distill", "observer/metrics"}},
	{"observer/checkpoint", []string{"events/...", "markdown", "projector", "sqlstore/...", "observer", "observer/distill"}},
	{"observer/handedit", []string{"events/...", "markdown", "projector", "sqlstore/...", "observer"}},
	{"observer/importer", []string{"events/...", "markdown", "projector", "sqlstore/...", "observer", "observer/distill", "observer/dsh", "observer/metrics"}},
	// Backups and rotation: the engine's log and index, broker's rules of
	// when each is due.
	{"observer/backup", []string{"events/...", "markdown", "projector", "sqlstore/...", "observer", "observer/broker"}},
	{"observer/ui", []string{"events/...", "markdown", "projector", "sqlstore/...", "observer"}},
	{"observer/httpapi", []string{"events/...", "markdown", "projector", "sqlstore/...", "observer", "observer/backup", "observer/broker", "observer/checkpoint", "observer/distill", "observer/importer", "observer/metrics", "observer/scrub", "observer/ui"}},
	{"observer/bench", []string{"events/...", "markdown", "projector", "sqlstore/...", "observer", "observer/backup", "observer/httpapi"}},
	{"observer/demo", []string{"events/...", "markdown", "projector", "replay", "sqlstore/...", "observer", "observer/broker", "observer/checkpoint", "observer/distill", "observer/importer"}},
	{"observer/reader", []string{"events/...", "observer", "replay", "sqlstore"}},
	{"observer/scrub", []string{"events/...", "markdown", "projector", "replay", "sqlstore/...", "observer"}},
	{"observer/dsh/plugin", []string{"markdown", "observer/httpapi"}},
	{"observer/dsh/plugin/hosttest", nil},
	{"observer/dsh/dshtest", nil},
	{"observer/internal/enginetest", []string{"events/...", "observer", "projector", "sqlstore/..."}},
	{"cmd/dshmem", []string{"..."}},
}

func allowedImport(pkg, imp string) (ruled, ok bool) {
	best := -1
	for i, l := range layers {
		if pkg == l.pkg {
			best = i
		}
	}
	if best < 0 {
		return false, false
	}
	for _, a := range layers[best].allow {
		base, tree := strings.CutSuffix(a, "/...")
		if a == "..." || imp == base || tree && strings.HasPrefix(imp, base+"/") {
			return true, true
		}
	}
	return true, false
}

// TestLayout keeps the tree a house: every package is in the table above
// and imports only what it allows, nothing imports cmd, and no file
// outside tests is over 650 lines.
func TestLayout(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	seen := map[string]bool{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		test := strings.HasSuffix(path, "_test.go")
		if !test {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			lines := strings.Count(string(b), "\n")
			assert.LessOrEqual(t, lines, 650, "%s is %d lines: split it by concern", filepath.Join(pkg, d.Name()), lines)
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		require.NoError(t, err)
		if !test {
			seen[pkg] = true
		}
		for _, is := range f.Imports {
			imp, _ := strconv.Unquote(is.Path.Value)
			ours, found := strings.CutPrefix(imp, "dshmem/")
			if !found {
				continue
			}
			assert.NotEqual(t, "cmd/dshmem", ours, "%s imports cmd", path)
			if test {
				continue // tests may import whatever they check against
			}
			ruled, ok := allowedImport(pkg, ours)
			if assert.True(t, ruled, "package %s is not in the layout table: add it (and to README's Layout)", pkg) {
				assert.True(t, ok, "%s imports %s, against the layout", filepath.Join(pkg, d.Name()), ours)
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.True(t, seen["events"] && seen["observer"] && seen["cmd/dshmem"], "the walk found no packages: the test would prove nothing")
	for _, l := range layers {
		if !seen[l.pkg] {
			t.Errorf("layout lists %s, which has no code: remove it", l.pkg)
		}
	}
}
