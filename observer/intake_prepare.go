package observer

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"dshmem/events"
)

// prepared is a call's lines validated and redacted (prepare), waiting
// for ingest to append and fold them.
type prepared struct {
	items []intakeItem
	out   []Outcome
}

// prepare validates and redacts lines in parallel, touching neither the
// log nor the index, so a caller keeping its calls in order
// (IngestStream) can prepare the next while the one before is appended
// and folded. nums are the input line numbers; nil means 1, 2, 3, ….
func (e *Engine) prepare(lines [][]byte, nums []int) prepared {
	lineNo := func(i int) int {
		if nums != nil {
			return nums[i]
		}
		return i + 1
	}
	envs := make([]events.Envelope, len(lines))
	errs := make([]*LineError, len(lines))
	parallel(len(lines), func(i int) {
		envs[i], errs[i] = Validate(lines[i], lineNo(i))
		if errs[i] == nil {
			if _, err := e.red.Envelope(&envs[i]); err != nil {
				errs[i] = &LineError{Line: lineNo(i), Field: "data", Msg: err.Error()}
			}
		}
	})
	p := prepared{items: make([]intakeItem, 0, len(lines)), out: make([]Outcome, len(lines))}
	for i := range lines {
		p.out[i] = Outcome{Line: lineNo(i), ID: envs[i].ID}
		if errs[i] != nil {
			p.out[i].Status, p.out[i].Error = StatusRejected, errs[i]
			continue
		}
		p.items = append(p.items, intakeItem{line: lineNo(i), env: envs[i], outcome: i})
	}
	return p
}

// parallel runs fn(0..n-1) on up to GOMAXPROCS goroutines.
func parallel(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n/64+1)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	var next atomic.Int64
	const chunk = 32
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				start := int(next.Add(chunk)) - chunk
				if start >= n {
					return
				}
				for i := start; i < min(start+chunk, n); i++ {
					fn(i)
				}
			}
		}()
	}
	wg.Wait()
}

// PreparedCall is one call's lines validated and redacted by
// Engine.Prepare, waiting for Engine.IngestPrepared.
type PreparedCall struct{ p prepared }

// Prepare validates and redacts lines (numbered 1, 2, 3, …) as Ingest
// does, touching neither the log nor the index: a caller that keeps its
// calls in order (the server's intake) prepares the next call while the
// one before it is appended and folded.
func (e *Engine) Prepare(lines [][]byte) *PreparedCall {
	return &PreparedCall{p: e.prepare(lines, nil)}
}

// IngestPrepared appends and folds a prepared call: Ingest after
// Prepare. staged, when set, is called once the call's place in the log
// order is fixed, so a call started after it cannot be appended before
// it; it is called before IngestPrepared returns in every case.
func (e *Engine) IngestPrepared(ctx context.Context, c *PreparedCall, staged func()) (IngestResult, []Outcome, error) {
	if e.log == nil {
		if staged != nil {
			staged()
		}
		return IngestResult{}, nil, ErrReadOnly
	}
	return e.ingest(ctx, c.p.items, c.p.out, staged)
}
