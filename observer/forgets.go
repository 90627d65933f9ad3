package observer

import (
	"encoding/json"
	"sync"
	"time"

	"dshmem/events"
)

// forgetClock keeps when this process appended the forgets of entries
// (memory/forget, by entry id) and memory ops, which may forget too (by
// stream). Remember asks it whether the forget of the entry its text
// already made came after the remember was received: a remember sent
// before the forget, whose turn came only after it (its client gave up
// and sent it again, the retry was answered and the entry forgotten),
// is the same remember as the one that made the entry, not the text
// remembered anew. Only this process's requests are compared, so a
// clock of this process is enough; times older than forgetClockKeep are
// dropped once the clock holds forgetClockMax of them.
type forgetClock struct {
	mu     sync.Mutex
	entry  map[string]time.Time
	stream map[string]time.Time
}

const (
	forgetClockMax  = 4096
	forgetClockKeep = 10 * time.Minute
)

// note records the forgets and ops among evs, appended at now; it runs
// before they are folded, so a reader that finds an entry forgotten in
// the index finds its time here.
func (c *forgetClock) note(evs []events.Envelope, now time.Time) {
	for i := range evs {
		ev := &evs[i]
		switch ev.Type {
		case events.TypeMemoryForget:
			var f struct {
				EntryID string `json:"entryId"`
			}
			if json.Unmarshal(ev.Data, &f) == nil && f.EntryID != "" {
				c.set(&c.entry, f.EntryID, now)
			}
		case events.TypeMemoryOps:
			c.set(&c.stream, ev.Stream, now)
		}
	}
}

func (c *forgetClock) set(m *map[string]time.Time, key string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *m == nil {
		*m = map[string]time.Time{}
	}
	if len(*m) >= forgetClockMax {
		for k, t := range *m {
			if now.Sub(t) > forgetClockKeep {
				delete(*m, k)
			}
		}
	}
	(*m)[key] = now
}

// since reports whether entry id of stream may have been forgotten at or
// after t by an event this process appended.
func (c *forgetClock) since(id, stream string, t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.entry[id]; ok && !f.Before(t) {
		return true
	}
	f, ok := c.stream[stream]
	return ok && !f.Before(t)
}
