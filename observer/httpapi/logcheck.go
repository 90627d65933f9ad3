package httpapi

import (
	"context"
	"fmt"
	"sync"
	"time"

	"dshmem/events"
)

// Open trusts a sealed segment by its seal and the index's folded seqs
// by their batch headers (events.Options.Trusted), so a large root
// opens in milliseconds. The full walk of every byte is `dshmem verify`'s;
// `dshmem serve` also runs it in the background at start and reports
// through GET /v1/healthz (Health.Log).

// LogCheck is the state of the background walk of the log.
type LogCheck struct {
	// State is running, ok, corrupt (Problems says where) or failed
	// (the walk could not read the log; Error says why).
	State    string   `json:"state"`
	Problems []string `json:"problems,omitempty"` // the first maxLogProblems, "segment at offset N: what"
	Count    int      `json:"count,omitempty"`    // every problem found
	Streams  int      `json:"streams,omitempty"`
	Segments int      `json:"segments,omitempty"`
	Events   uint64   `json:"events,omitempty"`
	Seconds  float64  `json:"seconds,omitempty"`
	Error    string   `json:"error,omitempty"`
}

const maxLogProblems = 10

// logChecker holds the result of the walk for healthz.
type logChecker struct {
	log   *events.Log // set by NewServer, before anything runs
	mu    sync.Mutex
	state LogCheck
}

func (c *logChecker) get() *LogCheck {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state.State == "" {
		return nil
	}
	st := c.state
	return &st
}

// run walks every segment the log had committed when it started,
// checking every frame's checksum, the seqs and the hash chain, and
// decoding every event, while the server goes on writing.
func (c *logChecker) run(ctx context.Context) {
	c.mu.Lock()
	c.state = LogCheck{State: "running"}
	c.mu.Unlock()
	start := time.Now()
	problems, checked, err := c.log.Verify(ctx)
	st := LogCheck{State: "ok", Count: len(problems), Streams: checked.Streams, Segments: checked.Segments,
		Events: checked.Events, Seconds: time.Since(start).Seconds()}
	for i, p := range problems {
		if i == maxLogProblems {
			break
		}
		st.Problems = append(st.Problems, p.String())
	}
	switch {
	case ctx.Err() != nil:
		return // stopped by shutdown; nothing to report
	case err != nil:
		st.State, st.Error = "failed", fmt.Sprintf("verify the log: %v", err)
	case len(problems) > 0:
		st.State = "corrupt"
	}
	c.mu.Lock()
	c.state = st
	c.mu.Unlock()
}
