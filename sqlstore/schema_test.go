package sqlstore

import (
	"context"
	"path/filepath"
	"testing"
)

// TestSchemaVersions: a read-only store tells an index an older build
// made (migrations pending) from one it can read.
func TestSchemaVersions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	all := applied(t, path)
	newest := all[len(all)-1]
	check := func(wantCurrent int64) {
		t.Helper()
		ro, err := OpenReadOnly(path)
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		cur, latest, err := ro.SchemaVersions(context.Background())
		if err != nil || cur != wantCurrent || latest != newest {
			t.Fatalf("got %d, %d, %v; want %d, %d", cur, latest, err, wantCurrent, newest)
		}
	}
	check(newest)
	if err := MigrateDownTo(path, newest-1); err != nil {
		t.Fatal(err)
	}
	check(newest - 1)
}
