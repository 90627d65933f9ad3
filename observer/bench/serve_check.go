package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// The bench's event ids are "bench-S:N:K": event K of session S's step
// N. A session's first step pushes five events (session/start first),
// every later one four.
func benchSessionID(s int) string     { return fmt.Sprintf("bench-%d", s) }
func benchEventID(s, n, k int) string { return fmt.Sprintf("%s:%d:%d", benchSessionID(s), n, k) }

// stepEvents is how many events step n of a session pushes.
func stepEvents(n int) int {
	if n == 0 {
		return 5
	}
	return 4
}

// parseBenchEventID is benchEventID's inverse; false for any other id
// (the server's own events, such as memory/shown).
func parseBenchEventID(id string) (s, n, k int, ok bool) {
	rest, found := strings.CutPrefix(id, "bench-")
	parts := strings.Split(rest, ":")
	if !found || len(parts) != 3 {
		return 0, 0, 0, false
	}
	var nums [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || strconv.Itoa(v) != p {
			return 0, 0, 0, false
		}
		nums[i] = v
	}
	return nums[0], nums[1], nums[2], true
}

// pushLedger is what one session pushed, in memory that does not grow
// with the run: its steps 0..Steps-1, each with stepEvents(n) events,
// were all acknowledged (200) but those in Failed, which are request
// errors too and so rare.
type pushLedger struct {
	Stream string
	Steps  int
	Failed []int
}

// events is how many events the session pushed, acknowledged or not.
func (l pushLedger) events() int {
	if l.Steps == 0 {
		return 0
	}
	return 5 + 4*(l.Steps-1)
}

// logCheck checks the log against the sessions' ledgers: every
// acknowledged event must be in its session's stream exactly once. It
// holds one byte a step (a bit an event) while it reads, not the ids.
type logCheck struct {
	ledgers []pushLedger
	seen    [][]uint8 // session → step → bit k set once event k was found
	dup     int
}

func newLogCheck(ledgers []pushLedger) *logCheck {
	c := &logCheck{ledgers: ledgers, seen: make([][]uint8, len(ledgers))}
	for s, l := range ledgers {
		c.seen[s] = make([]uint8, l.Steps)
	}
	return c
}

// see counts one event read from stream's log. Ids the bench did not
// push there are not its business.
func (c *logCheck) see(stream, id string) {
	s, n, k, ok := parseBenchEventID(id)
	if !ok || s >= len(c.ledgers) || c.ledgers[s].Stream != stream || n >= c.ledgers[s].Steps || k >= stepEvents(n) {
		return
	}
	bit := uint8(1) << k
	if c.seen[s][n]&bit != 0 {
		c.dup++
	}
	c.seen[s][n] |= bit
}

// result is how many events were pushed in all, how many acknowledged
// ones were not found, and how many were found more than once.
func (c *logCheck) result() (pushed, lost, duplicated int) {
	for s, l := range c.ledgers {
		pushed += l.events()
		failed := map[int]bool{}
		for _, n := range l.Failed {
			failed[n] = true
		}
		for n, got := range c.seen[s] {
			if failed[n] {
				continue
			}
			for k := range stepEvents(n) {
				if got&(1<<k) == 0 {
					lost++
				}
			}
		}
	}
	return pushed, lost, c.dup
}
