package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// meter prints the progress of a long write on a terminal, on one line
// redrawn at most every 200 ms: events done, events/s, bytes done of the
// total when it is known, and the time left at that pace.
type meter struct {
	w     io.Writer
	verb  string
	total int64 // input bytes; 0 when unknown (a pipe)
	start time.Time

	mu      sync.Mutex
	events  int64
	bytes   int64
	last    time.Time
	printed bool
}

// newMeter returns a meter writing to env.stderr, or nil when stderr is
// not a terminal (every method of a nil meter does nothing).
func newMeter(env *cliEnv, verb string, totalBytes int64) *meter {
	if !isTerminal(env.stderr) {
		return nil
	}
	return &meter{w: env.stderr, verb: verb, total: totalBytes, start: time.Now()}
}

// set records the events and input bytes done so far.
func (m *meter) set(events, bytes int64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events, m.bytes = events, bytes
	m.draw(false)
}

// add counts more events (and input bytes) done.
func (m *meter) add(events, bytes int64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events += events
	m.bytes += bytes
	m.draw(false)
}

func (m *meter) draw(force bool) {
	now := time.Now()
	if !force && now.Sub(m.last) < 200*time.Millisecond {
		return
	}
	m.last = now
	m.printed = true
	el := now.Sub(m.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(m.events) / el
	}
	line := fmt.Sprintf("%s %d events, %.0f events/s, %s", m.verb, m.events, rate, mib(m.bytes))
	if m.total > 0 {
		line += " of " + mib(m.total)
		if m.bytes > 0 && m.bytes < m.total && el > 0 {
			left := time.Duration(el * float64(m.total-m.bytes) / float64(m.bytes) * float64(time.Second))
			line += ", ETA " + left.Round(time.Second).String()
		}
	}
	fmt.Fprintf(m.w, "\r\033[K%s", line)
}

// say prints a whole line above the progress line.
func (m *meter) say(format string, args ...any) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprintf(m.w, "\r\033[K"+format+"\n", args...)
	if m.printed {
		m.draw(true)
	}
}

// done ends the progress line.
func (m *meter) done() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.printed {
		fmt.Fprint(m.w, "\r\033[K")
	}
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
