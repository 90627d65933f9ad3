package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/jmoiron/sqlx"
	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"

	"dshmem/migrations"
)

// Store is an open index database.
type Store struct {
	db       *sqlx.DB
	path     string
	readOnly bool

	// The checkpointer of a read-write store (checkpoint.go).
	ckptStop   chan struct{}
	ckptDone   chan struct{}
	commits    atomic.Int64 // fold commits (noteCommit)
	lastCommit atomic.Int64 // unix nanoseconds of the last one

	// The fold's statements prepared on the pool (fold.go).
	foldMu    sync.Mutex
	foldStmts map[string]*sql.Stmt

	// The hot reads of the write path prepared on the pool (read.go).
	readMu    sync.Mutex
	readStmts map[string]*sql.Stmt

	// entriesGen is raised by every write of entries other than a fold's
	// (EntriesGen).
	entriesGen atomic.Uint64
}

// EntriesGen is a count that every write of entries other than a fold
// raises, before and after it (PurgeStream, ReplaceWith; a new write of
// entries outside FoldTx must call entriesChanged too): a projector
// keeps what it read of entries across folds only while it stays the
// same.
func (s *Store) EntriesGen() uint64 { return s.entriesGen.Load() }

func (s *Store) entriesChanged() { s.entriesGen.Add(1) }

// writerPragmas are set on every connection of a read-write Store. They go
// into the DSN because a PRAGMA run through Exec reaches only one pooled
// connection. synchronous(NORMAL) is enough: the index is derived and a
// lost tail is folded again from the log on the next open.
var writerPragmas = []string{
	"journal_mode(WAL)",
	"synchronous(NORMAL)",
	// No checkpoint inside a commit: the commit that crossed the
	// threshold would copy the WAL into the database and fsync it on
	// the write path. The store's checkpointer does it in the
	// background (checkpoint.go).
	"wal_autocheckpoint(0)",
	"busy_timeout(5000)",
	"foreign_keys(1)",
	"temp_store(MEMORY)",
	// 128 MiB: keeps the hot b-tree and FTS pages of a large fold in
	// memory. The cache is per pooled connection (up to maxIdleConns),
	// so the index's memory is not bounded for the process. PRAGMA
	// soft_heap_limit cannot bound it: modernc's build has
	// SQLITE_DEFAULT_MEMSTATUS=0, SQLite counts no memory and never
	// enforces the limit. 16 MiB a connection was tried and measured
	// (README, Reliability, the soak row): 1M-event log+index ingest
	// 2,528 events/s against 4,292 with 128 MiB on a loaded machine.
	"cache_size(-131072)",
}

// dsn builds a file: URI (URI parameters are ignored on a plain path).
func dsn(path string, params url.Values) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("resolve index path %s: %w", path, err)
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: params.Encode()}
	return u.String(), nil
}

func openWriter(path string, fault *Fault) (*sqlx.DB, error) {
	q := url.Values{}
	for _, p := range writerPragmas {
		q.Add("_pragma", p)
	}
	// BEGIN IMMEDIATE: a write transaction takes the write lock when it
	// starts, so two writers queue on busy_timeout instead of failing
	// with SQLITE_BUSY when one of them upgrades a read lock.
	q.Set("_txlock", "immediate")
	name, err := dsn(path, q)
	if err != nil {
		return nil, err
	}
	var db *sqlx.DB
	if fault != nil {
		db = sqlx.NewDb(sql.OpenDB(faultConnector{d: faultDriver{d: &sqlite.Driver{}, f: fault}, dsn: name}), "sqlite")
	} else if db, err = sqlx.Open("sqlite", name); err != nil {
		return nil, fmt.Errorf("open index %s: %w", path, err)
	}
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open index %s: %w", path, err)
	}
	// Keep the connections concurrent requests use: a new one costs the
	// pragmas and a read of the schema (database/sql keeps 2 by default).
	db.SetMaxIdleConns(maxIdleConns)
	return db, nil
}

// maxIdleConns is how many idle connections a Store keeps open.
const maxIdleConns = 16

// IndexFile is the name of the index inside a memory root
// (<root>/index.db, beside <root>/log). Part of the on-disk layout; do
// not change.
const IndexFile = "index.db"

// Open opens (creating if needed) the index at path in WAL mode and
// applies every pending migration.
func Open(path string) (*Store, error) { return OpenWith(path, OpenOptions{}) }

// OpenOptions configure OpenWith. The zero value is Open.
type OpenOptions struct {
	// Fault, when set, injects index write faults (fault.go; tests
	// only).
	Fault *Fault
}

// OpenWith is Open with options.
func OpenWith(path string, o OpenOptions) (*Store, error) {
	db, err := openWriter(path, o.Fault)
	if err != nil {
		return nil, err
	}
	p, err := newProvider(db.DB)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open index %s: %w", path, err)
	}
	if _, err := p.Up(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate index %s: %w", path, err)
	}
	st := &Store{db: db, path: path}
	st.startCheckpointer()
	return st, nil
}

// OpenReadOnly opens an existing index for audit queries. The connection
// is read-only three times over: the file is opened with mode=ro, the
// connection has query_only set, and an authorizer refuses every
// statement that could write (including ATTACH and PRAGMA assignments).
// Any refused statement returns ErrReadOnly.
func OpenReadOnly(path string) (*Store, error) {
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", "query_only(1)")
	q.Add("_pragma", "busy_timeout(5000)")
	name, err := dsn(path, q)
	if err != nil {
		return nil, err
	}
	d := &sqlite.Driver{}
	d.RegisterConnectionHook(installAuditAuthorizer)
	db := sqlx.NewDb(sql.OpenDB(connector{d: d, dsn: name}), "sqlite")
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open index %s read-only: %w", path, err)
	}
	return &Store{db: db, path: path, readOnly: true}, nil
}

// Close closes the database.
func (s *Store) Close() error {
	s.stopCheckpointer()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close index %s: %w", s.path, err)
	}
	return nil
}

// Path returns the file the store was opened from.
func (s *Store) Path() string { return s.path }

// newProvider returns a quiet goose provider over the embedded migrations.
func newProvider(db *sql.DB) (*goose.Provider, error) {
	return goose.NewProvider(goose.DialectSQLite3, db, migrations.FS)
}
