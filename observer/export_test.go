package observer

// SetPurgeHook makes PurgeScope call f at each of its steps (the purge
// crash test stops a child there to kill it).
func SetPurgeHook(f func(step string)) { purgeHook = f }

// Pending counts the events appended and not yet folded that the
// engine still holds in its pending sets (ids and session cwds).
func (e *Engine) Pending() int {
	e.pendMu.Lock()
	defer e.pendMu.Unlock()
	n := len(e.pendingCwd)
	for _, ids := range e.pendingIDs {
		n += len(ids)
	}
	return n
}
