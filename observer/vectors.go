package observer

import (
	"context"
	"sync"
	"time"

	"dshmem/sqlstore/vectors"
)

// The sentence encoder's vectors are a projection of the index's text
// (sqlstore/vectors): a writer engine with a model (StartVectors) fills
// them in the background after each fold, never on the path of an
// acknowledgement, and Recall fuses them with the words (recall.Query's
// Dense). Without a model nothing here runs and recall is as it was.

// vectorState is the Engine's part in the vectors: the fill, and what
// Recall searches.
type vectorState struct {
	fill  *vectorFill
	mu    sync.Mutex
	dense *vectors.Dense
}

// stopVectors stops the fill (Close).
func (e *Engine) stopVectors() {
	if e.vectors.fill != nil {
		e.vectors.fill.stop()
		e.vectors.fill = nil
	}
}

// UseDense makes Recall find the nearest vectors of d for queries that
// set no Dense of their own (nil: words alone). It does not fill any.
func (e *Engine) UseDense(d *vectors.Dense) {
	e.vectors.mu.Lock()
	e.vectors.dense = d
	e.vectors.mu.Unlock()
}

func (e *Engine) denseOf() *vectors.Dense {
	e.vectors.mu.Lock()
	defer e.vectors.mu.Unlock()
	return e.vectors.dense
}

// StartVectors uses d for recall (UseDense) and starts the background
// fill of the index's vectors with workers encoders (0: 1). It returns
// at once; Close stops the fill. A read-only engine only uses d.
func (e *Engine) StartVectors(d *vectors.Dense, workers int) {
	e.UseDense(d)
	if e.log == nil || e.vectors.fill != nil {
		return
	}
	v := &vectorFill{e: e, d: d, opts: vectors.FillOptions{Workers: workers},
		kicks: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	e.vectors.fill = v
	v.kick() // what the index holds already
	go v.run()
}

// KickVectors asks the background fill to look for text without a
// vector (a scrub that replaced the index calls it).
func (e *Engine) KickVectors() { e.vectors.fill.kick() }

// VectorsIdle waits until the background fill has nothing left to do
// (tests, and `dshmem bench` before it measures), or ctx ends.
func (e *Engine) VectorsIdle(ctx context.Context) error {
	if e.vectors.fill == nil {
		return nil
	}
	for {
		e.vectors.fill.mu.Lock()
		idle, ch := !e.vectors.fill.busy, e.vectors.fill.idle
		e.vectors.fill.mu.Unlock()
		if idle {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// VectorsError is the error of the last background fill, or nil.
func (e *Engine) VectorsError() error {
	if e.vectors.fill == nil {
		return nil
	}
	e.vectors.fill.mu.Lock()
	defer e.vectors.fill.mu.Unlock()
	return e.vectors.fill.err
}

// VectorsStatus is what the background fill is doing (GET /v1/healthz's
// "vectors"): its encoders, whether text is waiting for a vector, what it
// did since the engine started and its last error.
type VectorsStatus struct {
	Encoders int  `json:"encoders"`
	Filling  bool `json:"filling"` // text acknowledged since the last fill ended, or a fill running
	// What every fill since the start did: encoded, notEnglish, dropped.
	vectors.FillReport
	Error string `json:"error,omitempty"`
}

// VectorsStatus reports the background fill, or nil when none runs (no
// model, --vectors=false, a read-only engine).
func (e *Engine) VectorsStatus() *VectorsStatus {
	v := e.vectors.fill
	if v == nil {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	st := &VectorsStatus{Encoders: max(v.opts.Workers, 1), Filling: v.busy, FillReport: v.total}
	if v.err != nil {
		st.Error = v.err.Error()
	}
	return st
}

// vectorFill runs vectors.Fill whenever a fold kicked it.
type vectorFill struct {
	e     *Engine
	d     *vectors.Dense
	opts  vectors.FillOptions
	kicks chan struct{} // capacity 1
	quit  chan struct{}
	done  chan struct{}

	mu    sync.Mutex
	busy  bool
	idle  chan struct{} // closed when a fill ends
	err   error
	total vectors.FillReport // what every fill since the start did
}

// kick says a fold committed. It never blocks; nil-safe.
func (v *vectorFill) kick() {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.busy = true
	if v.idle == nil {
		v.idle = make(chan struct{})
	}
	select {
	case v.kicks <- struct{}{}:
	default:
	}
}

// fillPause is how long the fill waits after a kick, so a burst of folds
// is encoded in a few batches rather than one batch a fold.
const fillPause = 100 * time.Millisecond

func (v *vectorFill) run() {
	defer close(v.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-v.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-v.kicks:
		case <-v.quit:
			return
		}
		t := time.NewTimer(fillPause)
		select {
		case <-t.C:
		case <-v.quit:
			t.Stop()
			return
		}
		rep, err := vectors.Fill(ctx, v.e.store, v.d.Model(), v.opts)
		v.mu.Lock()
		v.total.Add(rep)
		if ctx.Err() == nil {
			v.err = err
		}
		if len(v.kicks) == 0 { // no fold since this fill began
			v.busy = false
			if v.idle != nil {
				close(v.idle)
				v.idle = nil
			}
		}
		v.mu.Unlock()
	}
}

func (v *vectorFill) stop() {
	close(v.quit)
	<-v.done
}
