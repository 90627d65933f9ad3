package sqlstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// auditFixture returns the path of an index holding one event, closed.
func auditFixture(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "index.db")
	s, err := Open(p)
	require.NoError(t, err)
	defer s.Close()
	s.db.MustExec(`INSERT INTO events (stream, seq, id, type, time, data) VALUES ('global', 1, 'e1', 'user/message', '2026-08-18T10:00:00Z', '{"text":"hello"}')`)
	s.db.MustExec(`INSERT INTO episodes (n, injected) VALUES (1, 0)`)
	s.db.MustExec(`INSERT INTO episodes_fts (rowid, bigrams) VALUES (1, 'hello')`)
	s.db.MustExec(`INSERT INTO cursors (stream, seq) VALUES ('global', 1)`)
	return p
}

func TestAuditReads(t *testing.T) {
	p := auditFixture(t)
	s, err := OpenReadOnly(p)
	require.NoError(t, err)
	defer s.Close()
	ctx := context.Background()
	for _, q := range []string{
		`SELECT stream, seq, id, data ->> 'text' FROM events`,
		`WITH x AS (SELECT 1 AS a) SELECT a FROM x`,
		`SELECT count(*) FROM episodes_fts WHERE episodes_fts MATCH 'hello'`,
		`SELECT text FROM episode_texts`,
		`SELECT * FROM episodes_terms`,
		`PRAGMA table_info(events)`,
		`SELECT name FROM pragma_table_info('events')`,
		`PRAGMA user_version`,
		`PRAGMA journal_mode`,
		`EXPLAIN QUERY PLAN SELECT * FROM events WHERE stream = 'global'`,
	} {
		t.Run("OK", func(t *testing.T) {
			cols, rows, err := s.Query(ctx, q)
			require.NoError(t, err, "%s", q)
			assert.False(t, len(cols) == 0 || len(rows) == 0, "%s: got %d columns, %d rows; want some of both", q, len(cols), len(rows))
		})
	}
	cols, rows, err := s.Query(ctx, `SELECT id, seq, data ->> 'text' AS text FROM events WHERE stream = ?`, "global")
	require.NoError(t, err)
	assert.False(t, len(cols) != 3 || cols[2] != "text" || len(rows) != 1 || rows[0][0] != "e1" || rows[0][1] != int64(1) || rows[0][2] != "hello", "got %v %v, want [id seq text] [[e1 1 hello]]", cols, rows)
}

func TestAuditRefusesWrites(t *testing.T) {
	p := auditFixture(t)
	dir := filepath.Dir(p)
	other := filepath.Join(dir, "other.db")
	s, err := OpenReadOnly(p)
	require.NoError(t, err)
	defer s.Close()
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO events (stream, seq, id, type, time) VALUES ('global', 2, 'e2', 'x', 't')`,
		`UPDATE events SET type = 'x'`,
		`DELETE FROM events`,
		`DELETE FROM cursors`,
		`REPLACE INTO cursors (stream, seq) VALUES ('global', 9)`,
		`CREATE TABLE t (a)`,
		`CREATE TEMP TABLE t (a)`,
		`CREATE TEMP VIEW v AS SELECT 1`,
		`CREATE INDEX i ON events (type)`,
		`DROP TABLE events`,
		`DROP VIEW episode_texts`,
		`ALTER TABLE events ADD COLUMN x`,
		`ATTACH DATABASE '` + other + `' AS o`,
		`ATTACH DATABASE 'file:` + other + `?mode=rwc' AS o`,
		`ATTACH DATABASE ':memory:' AS m`,
		`PRAGMA user_version = 7`,
		`PRAGMA journal_mode = DELETE`,
		`PRAGMA query_only = 0`,
		`PRAGMA foreign_keys = OFF`,
		`PRAGMA wal_checkpoint(TRUNCATE)`,
		`PRAGMA optimize`,
		`PRAGMA incremental_vacuum`,
		`VACUUM`,
		` /* c */ -- c
		vacuum INTO '` + other + `'`,
		`REINDEX`,
		`ANALYZE`,
		`INSERT INTO episodes_fts (episodes_fts) VALUES ('optimize')`,
		`WITH x AS (SELECT 1) DELETE FROM events`,
		`SELECT 1; DELETE FROM events`,
	} {
		t.Run("ErrReadOnly", func(t *testing.T) {
			_, _, err := s.Query(ctx, q)
			assert.ErrorIs(t, err, ErrReadOnly, "%s: got %v, want ErrReadOnly", q, err)
		})
	}
	// Nothing changed and nothing was created.
	_, rows, err := s.Query(ctx, `SELECT (SELECT count(*) FROM events), (SELECT seq FROM cursors), (SELECT user_version FROM pragma_user_version())`)
	require.NoError(t, err)
	assert.False(t, rows[0][0] != int64(1) || rows[0][1] != int64(1) || rows[0][2] != int64(0), "after refused writes got events, cursor, user_version = %v, want [1 1 0]", rows[0])
	if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %v for %s, want it not created", err, other)
	}
	got := ErrReadOnly.Error()
	assert.EqualValues(t, "sql: the audit connection is read-only; use dshmem commands to change memory", got, "got message %q", got)
}

func TestAuditOpen(t *testing.T) {
	t.Run("ErrMissingFile", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "missing.db")
		if s, err := OpenReadOnly(p); err == nil {
			s.Close()
			t.Fatal("got nil error opening a missing index read-only")
		}
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("OpenReadOnly created %s", p)
		}
	})
	t.Run("ErrNotAudit", func(t *testing.T) {
		s, err := Open(filepath.Join(t.TempDir(), "index.db"))
		require.NoError(t, err)
		defer s.Close()
		if _, _, err := s.Query(context.Background(), `SELECT 1`); !errors.Is(err, ErrNotAudit) {
			t.Errorf("got %v, want ErrNotAudit", err)
		}
	})
	t.Run("WhileWriterOpen", func(t *testing.T) {
		p := auditFixture(t)
		w, err := Open(p)
		require.NoError(t, err)
		defer w.Close()
		w.db.MustExec(`INSERT INTO cursors (stream, seq) VALUES ('ws-a', 5)`)
		r, err := OpenReadOnly(p)
		require.NoError(t, err)
		defer r.Close()
		_, rows, err := r.Query(context.Background(), `SELECT seq FROM cursors WHERE stream = 'ws-a'`)
		assert.False(t, err != nil || len(rows) != 1 || rows[0][0] != int64(5), "got %v, %v; want the writer's committed row", rows, err)
	})
}
