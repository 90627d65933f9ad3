package observer

import (
	"context"
	"sync"
	"time"

	"dshmem/projector"
)

// DefaultFilesInterval is the least time between two writes of the
// Markdown projections: a burst of writes renders each file at most once
// per interval, from the newest state.
const DefaultFilesInterval = 50 * time.Millisecond

// fileWriter writes the Markdown projections that folds queue, in the
// background: the acknowledgement of a write waits for the log's fsync
// and the index commit, not for the files, which are projections the
// index records by hash and Open repairs (projector.RepairFiles).
type fileWriter struct {
	proj     *projector.Projector
	interval time.Duration
	kicks    chan struct{} // capacity 1: "something is queued"
	quit     chan struct{}
	done     chan struct{}

	mu  sync.Mutex
	err error // of the last write; nil once one succeeds
}

func startFileWriter(p *projector.Projector, interval time.Duration) *fileWriter {
	if interval == 0 {
		interval = DefaultFilesInterval
	}
	w := &fileWriter{proj: p, interval: interval, kicks: make(chan struct{}, 1),
		quit: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// kick says a fold queued files. It never blocks.
func (w *fileWriter) kick() {
	select {
	case w.kicks <- struct{}{}:
	default:
	}
}

func (w *fileWriter) run() {
	defer close(w.done)
	if w.interval < 0 {
		<-w.quit // held: only WriteFiles and Close write (tests)
		return
	}
	for {
		select {
		case <-w.kicks:
		case <-w.quit:
			return
		}
		wait := w.interval
		if err := w.write(); err != nil {
			// The files stay queued: try again after filesRetry, with
			// or without a new write, so they are put right once the
			// cause (a full disk) is gone.
			wait = max(wait, filesRetry)
			w.kick()
		}
		// Coalesce: what is queued during the interval is written once.
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-w.quit:
			t.Stop()
			return
		}
	}
}

// filesRetry is how long the file writer waits after a failed write
// before it tries again.
const filesRetry = time.Second

func (w *fileWriter) write() error {
	err := w.proj.WriteQueued(context.Background())
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
	return err
}

// lastError is the error of the last background write, or nil.
func (w *fileWriter) lastError() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// stop ends the background writer and writes what is still queued.
func (w *fileWriter) stop() error {
	close(w.quit)
	<-w.done
	return w.proj.WriteQueued(context.Background())
}

// WriteFiles writes the Markdown files queued by folds now, instead of
// at the file writer's next turn: for callers that read the files next
// (tests, sync).
func (e *Engine) WriteFiles(ctx context.Context) error {
	if e.proj == nil {
		return nil
	}
	return e.proj.WriteQueued(ctx)
}

// FilesError is the error of the last background write of the Markdown
// files, or nil when it succeeded (the files are then as queued, or
// queued again). The log and the index are not affected by it.
func (e *Engine) FilesError() error {
	if e.files == nil {
		return nil
	}
	return e.files.lastError()
}
