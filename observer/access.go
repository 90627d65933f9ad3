package observer

import (
	"dshmem/events"
	"dshmem/projector"
	"dshmem/sqlstore"
)

// What an Engine lends the jobs built on it (httpapi, checkpoint,
// backup, scrub…): its parts and its state, read through methods so
// that nothing reaches into the engine's fields.

// ReadOnly reports whether e was opened with Options.ReadOnly; every
// write of a read-only engine returns ErrReadOnly.
func (e *Engine) ReadOnly() bool { return e.log == nil }

// Settled runs fn between two intake calls, once every appended event is
// folded, so that the index equals the log while fn reads it (a
// checkpoint's claim, a sync's comparison). fn must not ingest: intake
// waits until it returns.
func (e *Engine) Settled(fn func() error) error {
	e.lockSettled()
	defer e.mu.Unlock()
	return fn()
}

// Projector is the projector that folds e's log into its index and files.
func (e *Engine) Projector() *projector.Projector { return e.proj }

// Rebuilt says why the index was dropped and rebuilt from the log when
// the root was opened, or "" when it was not.
func (e *Engine) Rebuilt() string { return e.rebuilt }

// Root returns the root directory.
func (e *Engine) Root() string { return e.root }

// Log returns the event log (nil for a read-only engine).
func (e *Engine) Log() *events.Log { return e.log }

// Store returns the index.
func (e *Engine) Store() *sqlstore.Store { return e.store }

// Repairs returns the torn tails repaired when the log was opened.
func (e *Engine) Repairs() []events.Repaired {
	if e.log == nil {
		return nil
	}
	return e.log.Repairs()
}
