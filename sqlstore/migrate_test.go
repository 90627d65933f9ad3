package sqlstore

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"dshmem/migrations"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// schema returns the index schema (without goose's table) as text, one
// object per line in name order.
func schema(t *testing.T, path string) string {
	t.Helper()
	db, err := openWriter(path, nil)
	require.NoError(t, err)
	defer db.Close()
	var lines []string
	require.NoError(t, db.Select(&lines, `SELECT type || ' ' || name || ': ' || coalesce(sql, '')
		FROM sqlite_schema WHERE name NOT LIKE 'goose%' AND name NOT LIKE 'sqlite_%' ORDER BY name`))
	return strings.Join(lines, "\n")
}

func applied(t *testing.T, path string) []int64 {
	t.Helper()
	st, err := MigrationStatus(path)
	require.NoError(t, err)
	var out []int64
	for _, m := range st {
		if m.Applied {
			out = append(out, m.Version)
		}
	}
	return out
}

func TestMigrations(t *testing.T) {
	dir := t.TempDir()
	opened := filepath.Join(dir, "opened.db")
	s, err := Open(opened)
	require.NoError(t, err)
	s.Close()
	full := schema(t, opened)
	for _, table := range []string{"table events:", "table episodes_fts:", "table sessions:", "table entries:", "table entry_versions:", "table entries_fts:", "table cursors:", "table files:", "view episode_texts:"} {
		assert.Contains(t, full, table, "schema after Open lacks %q", table)
	}

	t.Run("StatusListsEveryMigration", func(t *testing.T) {
		st, err := MigrationStatus(opened)
		require.NoError(t, err)
		var names []string
		for _, m := range st {
			names = append(names, m.Name)
			assert.True(t, m.Applied, "after Open, %s is not applied", m.Name)
		}
		embedded, err := fs.Glob(migrations.FS, "*.sql")
		require.NoError(t, err, "embedded migrations: %v %v", embedded, err)
		require.False(t, len(embedded) < 6, "embedded migrations: %v %v", embedded, err)
		got, want := strings.Join(names, ","), strings.Join(embedded, ",")
		assert.Equal(t, want, got, "got %s, want every embedded migration in order: %s", got, want)
	})

	t.Run("MigrateUpEqualsOpen", func(t *testing.T) {
		p := filepath.Join(dir, "up.db")
		require.NoError(t, MigrateUp(p))
		got := schema(t, p)
		assert.Equal(t, full, got, "schema after MigrateUp differs from Open:\n%s\nwant\n%s", got, full)
	})

	t.Run("StatusDoesNotApply", func(t *testing.T) {
		p := filepath.Join(dir, "fresh.db")
		got := applied(t, p)
		assert.Len(t, got, 0, "got applied %v on a fresh file, want none", got)
		if got := schema(t, p); got != "" {
			t.Errorf("MigrationStatus created schema:\n%s", got)
		}
	})

	t.Run("DownToAndUpRoundTrip", func(t *testing.T) {
		p := filepath.Join(dir, "roundtrip.db")
		require.NoError(t, MigrateUp(p))
		require.NoError(t, MigrateDownTo(p, 1))
		got := applied(t, p)
		assert.False(t, len(got) != 1 || got[0] != 1, "after down-to 1: got applied %v, want [1]", got)
		mid := schema(t, p)
		assert.False(t, strings.Contains(mid, "entries") || strings.Contains(mid, "table files") || !strings.Contains(mid, "table events"), "after down-to 1 the schema is wrong:\n%s", mid)
		require.NoError(t, MigrateDownTo(p, 0))
		if got := schema(t, p); got != "" {
			t.Errorf("after down-to 0 the schema is not empty:\n%s", got)
		}
		require.NoError(t, MigrateUp(p))
		if got := schema(t, p); got != full {
			t.Errorf("schema after down and up differs:\n%s\nwant\n%s", got, full)
		}
		embedded, _ := fs.Glob(migrations.FS, "*.sql")
		if got := applied(t, p); len(got) != len(embedded) {
			t.Errorf("got applied %v, want all %d", got, len(embedded))
		}
	})

	t.Run("ErrNegativeVersion", func(t *testing.T) {
		err := MigrateDownTo(filepath.Join(dir, "neg.db"), -1)
		assert.Error(t, err, "got nil error for down-to -1")
	})
}
