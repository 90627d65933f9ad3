package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// ErrReadOnly is returned when a statement on the audit connection would
// change the database.
var ErrReadOnly = errors.New("sql: the audit connection is read-only; use dshmem commands to change memory")

// ErrNotAudit is returned by Query on a store not opened with OpenReadOnly.
var ErrNotAudit = errors.New("sqlstore: Query runs only on a store opened with OpenReadOnly")

// connector opens connections of a private driver, so the audit
// authorizer reaches only audit connections and nothing is registered
// process-wide.
type connector struct {
	d   *sqlite.Driver
	dsn string
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return c.d }

// readPragmas may run with an argument: they only report.
var readPragmas = map[string]bool{
	"table_info": true, "table_xinfo": true, "table_list": true,
	"index_list": true, "index_info": true, "index_xinfo": true,
	"foreign_key_list": true, "foreign_key_check": true,
	"integrity_check": true, "quick_check": true,
	"database_list": true, "collation_list": true, "function_list": true,
	"module_list": true, "pragma_list": true, "compile_options": true,
}

// getterPragmas report a setting when run without a value and change it
// with one; only the first form is allowed.
var getterPragmas = map[string]bool{
	"user_version": true, "schema_version": true, "application_id": true,
	"page_count": true, "page_size": true, "freelist_count": true,
	"journal_mode": true, "encoding": true, "data_version": true,
	"auto_vacuum": true, "foreign_keys": true, "query_only": true,
	"synchronous": true, "cache_size": true, "busy_timeout": true,
	"max_page_count": true, "mmap_size": true, "temp_store": true,
}

// auditAuthorizer allows reading and nothing else. It is the third lock
// after mode=ro and query_only: those two already make SQLite refuse
// writes to the file, but ATTACH, temp tables and PRAGMA assignments
// would get past them.
func auditAuthorizer(action sqlite.AuthorizerActionCode, arg1, arg2, _, _ string) sqlite.AuthorizerReturnCode {
	switch action {
	case sqlite.AuthSelect, sqlite.AuthRead, sqlite.AuthFunction, sqlite.AuthRecursive,
		sqlite.AuthTransaction, sqlite.AuthSavepoint:
		return sqlite.AuthorizerOK
	case sqlite.AuthPragma:
		name := strings.ToLower(arg1)
		if readPragmas[name] || (getterPragmas[name] && arg2 == "") {
			return sqlite.AuthorizerOK
		}
	}
	return sqlite.AuthorizerDeny
}

func installAuditAuthorizer(c sqlite.ExecQuerierContext, _ string) error {
	r, ok := c.(sqlite.AuthorizerRegisterer)
	if !ok {
		return errors.New("sqlite driver has no authorizer; refusing to open an audit connection")
	}
	return r.RegisterAuthorizer(auditAuthorizer)
}

// isWriteRefusal reports whether err is SQLite refusing a write: the
// authorizer (SQLITE_AUTH), mode=ro or query_only (SQLITE_READONLY).
func isWriteRefusal(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_AUTH, sqlite3.SQLITE_READONLY:
		return true
	}
	return false
}

// Query runs one audit statement on a read-only store and returns its
// column names and rows. Values are int64, float64, string, []byte or nil.
// A statement that would write returns ErrReadOnly.
func (s *Store) Query(ctx context.Context, query string, args ...any) (cols []string, rows [][]any, err error) {
	if !s.readOnly {
		return nil, nil, ErrNotAudit
	}
	if isVacuum(query) {
		// VACUUM INTO writes a new file and is not presented to the
		// authorizer.
		return nil, nil, ErrReadOnly
	}
	rs, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		if isWriteRefusal(err) {
			return nil, nil, ErrReadOnly
		}
		return nil, nil, fmt.Errorf("run query: %w", err)
	}
	defer rs.Close()
	if cols, err = rs.Columns(); err != nil {
		return nil, nil, fmt.Errorf("run query: %w", err)
	}
	for rs.Next() {
		row := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return nil, nil, fmt.Errorf("run query: %w", err)
		}
		rows = append(rows, row)
	}
	if err := rs.Err(); err != nil {
		if isWriteRefusal(err) {
			return nil, nil, ErrReadOnly
		}
		return nil, nil, fmt.Errorf("run query: %w", err)
	}
	return cols, rows, nil
}

// isVacuum reports whether the first keyword of query, after blanks and
// comments, is VACUUM.
func isVacuum(query string) bool {
	q := query
	for {
		q = strings.TrimLeft(q, " \t\r\n\f;")
		switch {
		case strings.HasPrefix(q, "--"):
			i := strings.IndexByte(q, '\n')
			if i < 0 {
				return false
			}
			q = q[i+1:]
		case strings.HasPrefix(q, "/*"):
			i := strings.Index(q, "*/")
			if i < 0 {
				return false
			}
			q = q[i+2:]
		default:
			return len(q) >= 6 && strings.EqualFold(q[:6], "vacuum")
		}
	}
}
