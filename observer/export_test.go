package observer

// SetPurgeHook makes PurgeScope call f at each of its steps (the purge
// crash test stops a child there to kill it).
func SetPurgeHook(f func(step string)) { purgeHook = f }
