package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"

	"modernc.org/sqlite"
)

// The index's fault seam, for tests. SQLite does its own file I/O inside
// the transpiled C code, and modernc.org/sqlite's Go VFS (sqlite/vfs) is
// read-only, so faults cannot be injected at xWrite/xSync. The seam is
// one level up: a database/sql driver wrapping the sqlite one fails the
// N-th write statement or commit with the error SQLite gives for the
// I/O fault. It shows how dshmem handles an index write that fails; it
// cannot show SQLite's own handling of a failed page or WAL frame
// (TestIndexSyscallFaults, under strace, and the tmpfs disk-full run do).

// FaultKind is the error a Fault injects.
type FaultKind int

const (
	// FaultIOErr fails the operation with SQLITE_IOERR ("disk I/O
	// error"), what SQLite reports for EIO.
	FaultIOErr FaultKind = iota + 1
	// FaultFull fails it with SQLITE_FULL ("database or disk is full"),
	// what SQLite reports for ENOSPC.
	FaultFull
	// FaultPartial lets the write statement run and fails the commit of
	// its transaction with SQLITE_FULL, which then rolls back: a
	// transaction that failed after some of its statements ran.
	FaultPartial
)

// FaultError is the error a Fault injects; its text is SQLite's.
type FaultError struct {
	Code int // SQLITE_IOERR (10) or SQLITE_FULL (13)
}

func (e *FaultError) Error() string {
	if e.Code == 13 {
		return "database or disk is full (13)"
	}
	return "disk I/O error (10)"
}

// Fault fails one write operation of a Store opened with it (OpenWith):
// the at-th write statement (INSERT, UPDATE, DELETE, REPLACE) or commit
// counted since Arm, once. Never set outside tests.
type Fault struct {
	mu    sync.Mutex
	n     int // operations seen
	at    int // the operation that fails (absolute), 0: none
	kind  FaultKind
	ops   []string
	fired string
}

// Arm makes the k-th write operation from now (from 1) fail with kind.
func (f *Fault) Arm(kind FaultKind, k int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.at, f.kind, f.fired = f.n+k, kind, ""
}

// Count is how many write operations the store has done.
func (f *Fault) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// Ops returns the write operations seen from index from on.
func (f *Fault) Ops(from int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ops[from:]...)
}

// Fired names the operation that failed, or "".
func (f *Fault) Fired() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fired
}

// step counts one write operation and returns the fault it must suffer.
func (f *Fault) step(op string) FaultKind {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	f.ops = append(f.ops, op)
	if f.n != f.at {
		return 0
	}
	f.fired = op
	return f.kind
}

func isWrite(query string) bool {
	q := strings.TrimSpace(query)
	i := strings.IndexAny(q, " \t\n(")
	if i < 0 {
		i = len(q)
	}
	switch strings.ToUpper(q[:i]) {
	case "INSERT", "UPDATE", "DELETE", "REPLACE":
		return true
	}
	return false
}

func opName(query string) string {
	q := strings.Join(strings.Fields(query), " ")
	if len(q) > 60 {
		q = q[:60]
	}
	return q
}

type faultDriver struct {
	d *sqlite.Driver
	f *Fault
}

func (d faultDriver) Open(name string) (driver.Conn, error) {
	c, err := d.d.Open(name)
	if err != nil {
		return nil, err
	}
	return &faultConn{c: c, f: d.f}, nil
}

type faultConnector struct {
	d   faultDriver
	dsn string
}

func (c faultConnector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }
func (c faultConnector) Driver() driver.Driver                        { return c.d }

// innerConn is what the sqlite driver's connection offers database/sql.
type innerConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

type faultConn struct {
	c  driver.Conn
	f  *Fault
	tx *faultTx // the open transaction, if any
}

func (c *faultConn) in() innerConn { return c.c.(innerConn) }

// write runs before a write statement: it returns the injected error,
// or nil to run the statement.
func (c *faultConn) write(query string) error {
	if !isWrite(query) {
		return nil
	}
	switch c.f.step(opName(query)) {
	case FaultIOErr:
		return &FaultError{Code: 10}
	case FaultFull:
		return &FaultError{Code: 13}
	case FaultPartial:
		if c.tx != nil {
			c.tx.doom = true
			return nil
		}
		return &FaultError{Code: 13}
	}
	return nil
}

func (c *faultConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *faultConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	s, err := c.in().PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &faultStmt{s: s, c: c, query: query}, nil
}

func (c *faultConn) Close() error { return c.c.Close() }

func (c *faultConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *faultConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	t, err := c.in().BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	c.tx = &faultTx{t: t, c: c}
	return c.tx, nil
}

func (c *faultConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.write(query); err != nil {
		return nil, err
	}
	return c.in().ExecContext(ctx, query, args)
}

func (c *faultConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.write(query); err != nil {
		return nil, err
	}
	return c.in().QueryContext(ctx, query, args)
}

func (c *faultConn) Ping(ctx context.Context) error         { return c.in().Ping(ctx) }
func (c *faultConn) ResetSession(ctx context.Context) error { return c.in().ResetSession(ctx) }
func (c *faultConn) IsValid() bool                          { return c.in().IsValid() }
func (c *faultConn) NewRestore(src string) (*sqlite.Backup, error) {
	return c.c.(restorer).NewRestore(src)
}

type faultTx struct {
	t    driver.Tx
	c    *faultConn
	doom bool // FaultPartial fired in the transaction: its commit fails
}

func (t *faultTx) Commit() error {
	t.c.tx = nil
	kind := t.c.f.step("COMMIT")
	if t.doom {
		kind = FaultFull
	}
	switch kind {
	case FaultIOErr, FaultFull, FaultPartial:
		// The commit failed: SQLite rolls the transaction back.
		code := 13
		if kind == FaultIOErr {
			code = 10
		}
		if err := t.t.Rollback(); err != nil {
			return errors.Join(&FaultError{Code: code}, fmt.Errorf("roll back: %w", err))
		}
		return &FaultError{Code: code}
	}
	return t.t.Commit()
}

func (t *faultTx) Rollback() error {
	t.c.tx = nil
	return t.t.Rollback()
}

type faultStmt struct {
	s     driver.Stmt
	c     *faultConn
	query string
}

func (s *faultStmt) Close() error  { return s.s.Close() }
func (s *faultStmt) NumInput() int { return s.s.NumInput() }

func (s *faultStmt) Exec(args []driver.Value) (driver.Result, error) {
	return nil, errors.New("sqlstore: fault seam: Exec without a context")
}

func (s *faultStmt) Query(args []driver.Value) (driver.Rows, error) {
	return nil, errors.New("sqlstore: fault seam: Query without a context")
}

func (s *faultStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if err := s.c.write(s.query); err != nil {
		return nil, err
	}
	return s.s.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *faultStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.c.write(s.query); err != nil {
		return nil, err
	}
	return s.s.(driver.StmtQueryContext).QueryContext(ctx, args)
}
