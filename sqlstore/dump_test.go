package sqlstore

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every table of the schema is in the dump or deliberately left out.
func TestDumpCoversSchema(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "index.db"))
	require.NoError(t, err)
	defer s.Close()
	var names []string
	require.NoError(t, s.db.Select(&names, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`))
	covered := map[string]bool{}
	for _, d := range dumpTables {
		covered[d.name] = true
	}
	shadow := []string{"_data", "_idx", "_config", "_docsize", "_content"}
	for _, n := range names {
		isShadow := false
		for _, suf := range shadow {
			if base, ok := strings.CutSuffix(n, suf); ok && covered[base] {
				isShadow = true
			}
		}
		if !covered[n] && !dumpSkipped[n] && !isShadow {
			t.Errorf("table %s is neither dumped nor skipped", n)
		}
	}
}
