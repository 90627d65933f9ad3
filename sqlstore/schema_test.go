package sqlstore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSchemaVersions: a read-only store tells an index an older build
// made (migrations pending) from one it can read.
func TestSchemaVersions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	s, err := Open(path)
	require.NoError(t, err)
	s.Close()
	all := applied(t, path)
	newest := all[len(all)-1]
	check := func(wantCurrent int64) {
		t.Helper()
		ro, err := OpenReadOnly(path)
		require.NoError(t, err)
		defer ro.Close()
		cur, latest, err := ro.SchemaVersions(context.Background())
		require.NoError(t, err, "got %d, %d, %v; want %d, %d", cur, latest, err, wantCurrent, newest)
		require.Equal(t, wantCurrent, cur, "got %d, %d, %v; want %d, %d", cur, latest, err, wantCurrent, newest)
		require.Equal(t, newest, latest, "got %d, %d, %v; want %d, %d", cur, latest, err, wantCurrent, newest)
	}
	check(newest)
	// Versions may have gaps (helpers number their migrations apart):
	// one down is the one applied before the newest.
	prev := all[len(all)-2]
	require.NoError(t, MigrateDownTo(path, prev))
	check(prev)
}
