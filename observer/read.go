package observer

import (
	"context"

	"dshmem/sqlstore"
)

// The reads the CLI answers from the index directly.

// Query runs one audit statement over the index of an engine opened
// read-only (`dshmem sql`); a statement that would write is refused.
func (e *Engine) Query(ctx context.Context, query string, args ...any) (cols []string, rows [][]any, err error) {
	return e.store.Query(ctx, query, args...)
}

// SessionCwd is the working directory the index knows for session.
func (e *Engine) SessionCwd(ctx context.Context, session string) (cwd string, ok bool, err error) {
	return e.store.SessionCwd(ctx, session)
}

// IndexStats counts what the index holds.
func (e *Engine) IndexStats(ctx context.Context) (sqlstore.StoreStats, error) {
	return e.store.Stats(ctx)
}
