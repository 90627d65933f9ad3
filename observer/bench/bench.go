package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"dshmem/events"
	"dshmem/observer"
	"dshmem/sqlstore"
)

// BenchOptions configure an ingest benchmark. The zero value works.
type BenchOptions struct {
	Events     int // total events; 0 → 100,000
	Size       int // bytes per event line; 0 → 300
	Producers  int // concurrent appenders for the log-only run; 0 → 16
	Batch      int // events per Append (log only) or per ingest call; 0 → 64 / 1,000
	Workspaces int // streams the events spread over; 0 → 4
	Progress   func(phase string, done, total int)
}

// BenchResult is one measured run.
type BenchResult struct {
	Phase         string        `json:"phase"`
	Events        int           `json:"events"`
	Elapsed       time.Duration `json:"elapsedNs"`
	EventsPerSec  float64       `json:"eventsPerSec"`
	P50           time.Duration `json:"p50Ns"`
	P99           time.Duration `json:"p99Ns"`
	LogBytes      int64         `json:"logBytes"`
	BytesPerEvent float64       `json:"bytesPerEvent"`
	IndexBytes    int64         `json:"indexBytes,omitempty"`
}

func (o *BenchOptions) defaults() {
	if o.Events <= 0 {
		o.Events = 100_000
	}
	if o.Size <= 0 {
		o.Size = 300
	}
	if o.Producers <= 0 {
		o.Producers = 16
	}
	if o.Workspaces <= 0 {
		o.Workspaces = 4
	}
}

// BenchLog appends synthetic events to a fresh log in dir with
// concurrent producers and measures throughput and acknowledgement
// latency (Append call to fsync'd return).
func BenchLog(ctx context.Context, dir string, o BenchOptions) (BenchResult, error) {
	o.defaults()
	batch := o.Batch
	if batch <= 0 {
		batch = 64
	}
	syn := NewSynth(1)
	envs := make([]events.Envelope, o.Events)
	for i := range envs {
		env, lerr := observer.Validate(syn.Line(i, o.Size, o.Workspaces), i+1)
		if lerr != nil {
			return BenchResult{}, lerr
		}
		env.Stream = observer.StreamForCwd(env.Cwd)
		envs[i] = env
	}
	lg, err := events.OpenLog(filepath.Join(dir, observer.LogDir), events.Options{})
	if err != nil {
		return BenchResult{}, err
	}
	defer lg.Close()

	// Each producer owns one workspace's events, so batches stay in
	// one stream, as a session's events do.
	type job struct{ evs []events.Envelope }
	jobs := make(chan job, o.Producers*2)
	lats := make([][]time.Duration, o.Producers)
	errc := make(chan error, o.Producers)
	var wg sync.WaitGroup
	start := time.Now()
	var done int
	var mu sync.Mutex
	for p := 0; p < o.Producers; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for j := range jobs {
				t0 := time.Now()
				if _, err := lg.Append(ctx, j.evs[0].Stream, j.evs); err != nil {
					errc <- err
					return
				}
				lats[p] = append(lats[p], time.Since(t0))
				if o.Progress != nil {
					mu.Lock()
					done += len(j.evs)
					o.Progress("log", done, o.Events)
					mu.Unlock()
				}
			}
		}(p)
	}
	byStream := map[string][]events.Envelope{}
	var order []string
	for _, e := range envs {
		if _, ok := byStream[e.Stream]; !ok {
			order = append(order, e.Stream)
		}
		byStream[e.Stream] = append(byStream[e.Stream], e)
	}
	// Round-robin over streams so all are busy at once.
	for off := 0; ; off += batch {
		any := false
		for _, s := range order {
			evs := byStream[s]
			if off < len(evs) {
				any = true
				jobs <- job{evs[off:min(off+batch, len(evs))]}
			}
		}
		if !any {
			break
		}
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)
	select {
	case err := <-errc:
		return BenchResult{}, err
	default:
	}
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	res := BenchResult{Phase: "log", Events: o.Events, Elapsed: elapsed}
	res.finish(all, dirBytes(filepath.Join(dir, observer.LogDir)))
	return res, nil
}

// BenchIngest runs the whole intake — validate, redact, resolve,
// dedupe, append with fsync, fold into SQLite and FTS5 — over
// synthetic JSONL lines in calls of o.Batch lines, into a fresh root.
func BenchIngest(ctx context.Context, root string, o BenchOptions) (BenchResult, error) {
	o.defaults()
	batch := o.Batch
	if batch <= 0 {
		batch = 1000
	}
	eng, err := observer.Open(ctx, root, observer.Options{})
	if err != nil {
		return BenchResult{}, err
	}
	defer eng.Close()
	// The lines are made up front so that making them is not measured.
	syn := NewSynth(1)
	var calls [][][]byte
	for i := 0; i < o.Events; {
		var lines [][]byte
		for ; i < o.Events && len(lines) < batch; i++ {
			lines = append(lines, syn.Line(i, o.Size, o.Workspaces))
		}
		calls = append(calls, lines)
	}
	// Two callers, as two sessions pushing at once: one call's
	// validation and redaction overlap the other's append and fold.
	callers := min(2, len(calls))
	var lats []time.Duration
	var mu sync.Mutex
	var next, done int
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next >= len(calls) || firstErr != nil {
					mu.Unlock()
					return
				}
				lines := calls[next]
				next++
				mu.Unlock()
				t0 := time.Now()
				res, _, err := eng.Ingest(ctx, lines)
				lat := time.Since(t0)
				mu.Lock()
				if err == nil && res.Appended != len(lines) {
					err = fmt.Errorf("bench: appended %d of %d events (%d rejected)", res.Appended, len(lines), res.Rejected)
				}
				if err != nil && firstErr == nil {
					firstErr = err
				}
				lats = append(lats, lat)
				done += len(lines)
				if o.Progress != nil {
					o.Progress("log+index", done, o.Events)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return BenchResult{}, firstErr
	}
	elapsed := time.Since(start)
	if err := eng.Close(); err != nil {
		return BenchResult{}, err
	}
	res := BenchResult{Phase: "log+index", Events: o.Events, Elapsed: elapsed}
	res.finish(lats, dirBytes(filepath.Join(root, observer.LogDir)))
	for _, s := range []string{"", "-wal"} {
		if fi, err := os.Stat(filepath.Join(root, sqlstore.IndexFile+s)); err == nil {
			res.IndexBytes += fi.Size()
		}
	}
	return res, nil
}

func (r *BenchResult) finish(lats []time.Duration, logBytes int64) {
	slices.Sort(lats)
	r.EventsPerSec = float64(r.Events) / r.Elapsed.Seconds()
	r.P50 = percentile(lats, 0.50)
	r.P99 = percentile(lats, 0.99)
	r.LogBytes = logBytes
	r.BytesPerEvent = float64(logBytes) / float64(r.Events)
}

func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
