package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// A client that sends one input in several POST /v1/events calls with
// more than one in flight (`dshmem ingest` with a server holding the
// root) names them with these headers: a run, the same for all of its
// calls, and each call's number in it, from 1. The server queues a
// run's call n only after its call n-1, so the log holds the input in
// its order although the calls come on separate connections.
const (
	HeaderIngestRun  = "Dshmem-Ingest-Run"
	HeaderIngestCall = "Dshmem-Ingest-Call"
)

// runTurnWait bounds how long a call waits for the call before it in
// its run (a variable for the tests); runForget is how long a run nobody
// calls is kept.
var runTurnWait = 60 * time.Second

const runForget = 10 * time.Minute

// ingestRuns holds, for each run, the number of the call whose turn it
// is to be queued.
type ingestRuns struct {
	mu    sync.Mutex
	runs  map[string]*ingestRun
	swept time.Time // when runs nobody calls were last dropped
}

var errStopping = errors.New("the server is stopping: send the call again to the next one")

type ingestRun struct {
	next    int           // the call whose turn it is
	changed chan struct{} // closed (and replaced) when next moves
	used    time.Time
}

// runCall reads a call's run headers. ok is false for a call without
// them; an error names the bad header.
func runCall(r *http.Request) (run string, call int, ok bool, err error) {
	run, num := r.Header.Get(HeaderIngestRun), r.Header.Get(HeaderIngestCall)
	if run == "" && num == "" {
		return "", 0, false, nil
	}
	if run == "" || len(run) > 64 {
		return "", 0, false, fmt.Errorf("header %s must be 1..64 characters, the same in every call of the run, beside %s", HeaderIngestRun, HeaderIngestCall)
	}
	call, cerr := strconv.Atoi(num)
	if cerr != nil || call < 1 {
		return "", 0, false, fmt.Errorf("header %s %q must be the call's number in its run, from 1", HeaderIngestCall, num)
	}
	return run, call, true, nil
}

// turn waits until call may be queued: its run's calls before it have
// been. It returns done, which the caller calls once the call is queued
// (or refused); from then on the next call's turn has come. A call whose
// turn has already passed (sent again) goes at once.
// It gives up when ctx ends or quit is closed (the server stops:
// errStopping).
func (rs *ingestRuns) turn(ctx context.Context, quit <-chan struct{}, run string, call int) (done func(), err error) {
	timer := time.NewTimer(runTurnWait)
	defer timer.Stop()
	for {
		rs.mu.Lock()
		r := rs.get(run)
		if r.next >= call {
			rs.mu.Unlock()
			return func() { rs.advance(run, call) }, nil
		}
		ch, next := r.changed, r.next
		rs.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-quit:
			return nil, errStopping
		case <-timer.C:
			return nil, fmt.Errorf("call %d of ingest run %q waited %s for call %d, which never came: send a run's calls in order, each after the one before it was sent", call, run, runTurnWait, next)
		}
	}
}

// advance moves the run past call, if it was call's turn.
func (rs *ingestRuns) advance(run string, call int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.get(run) // keeps the run alive while its calls come
	if r.next == call {
		r.next = call + 1
		close(r.changed)
		r.changed = make(chan struct{})
	}
}

// get returns run's state, made at its first call; at most once a
// minute it drops the runs nobody called for runForget. Under mu.
func (rs *ingestRuns) get(run string) *ingestRun {
	now := time.Now()
	if r, ok := rs.runs[run]; ok {
		r.used = now
		return r
	}
	if rs.runs == nil {
		rs.runs = map[string]*ingestRun{}
	}
	if now.Sub(rs.swept) > time.Minute {
		rs.swept = now
		for k, r := range rs.runs {
			if now.Sub(r.used) > runForget {
				delete(rs.runs, k)
			}
		}
	}
	r := &ingestRun{next: 1, changed: make(chan struct{}), used: now}
	rs.runs[run] = r
	return r
}

func closedChan() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
