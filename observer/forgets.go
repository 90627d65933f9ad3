package observer

import (
	"sync"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
)

// forgetClock keeps when this process appended the forgets of entries:
// memory/forget events and the forget ops of memory/ops. Remember asks it whether the forget of the entry its text
// already made came after the remember was received: a remember sent
// before the forget, whose turn came only after it (its client gave up
// and sent it again, the retry was answered and the entry forgotten),
// is the same remember as the one that made the entry, not the text
// remembered anew. Only this process's requests are compared, so a
// clock of this process is enough; times older than forgetClockKeep are
// dropped once the clock holds forgetClockMax of them.
type forgetClock struct {
	mu    sync.Mutex
	entry map[string]time.Time // entry id → when its forget was appended
}

const (
	forgetClockMax  = 4096
	forgetClockKeep = 10 * time.Minute
)

// note records the forgets among evs, appended at now; it runs before
// they are folded, so a reader that finds an entry forgotten in the
// index finds its time here.
func (c *forgetClock) note(evs []events.Envelope, now time.Time) {
	for i := range evs {
		ev := &evs[i]
		switch ev.Type {
		case events.TypeMemoryForget:
			var f payload.Forget
			if payload.Unmarshal(ev.Data, &f) == nil && f.EntryID != "" {
				c.set(f.EntryID, now)
			}
		case events.TypeMemoryOps:
			var ops payload.Ops
			if payload.Unmarshal(ev.Data, &ops) != nil {
				continue
			}
			for _, o := range ops.Ops {
				if o.Op == payload.OpForget && o.TargetID != "" {
					c.set(o.TargetID, now)
				}
			}
		}
	}
}

func (c *forgetClock) set(id string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entry == nil {
		c.entry = map[string]time.Time{}
	}
	if len(c.entry) >= forgetClockMax {
		for k, t := range c.entry {
			if now.Sub(t) > forgetClockKeep {
				delete(c.entry, k)
			}
		}
	}
	c.entry[id] = now
}

// since reports whether entry id may have been forgotten at or after t
// by an event this process appended.
func (c *forgetClock) since(id string, t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.entry[id]
	return ok && !f.Before(t)
}
