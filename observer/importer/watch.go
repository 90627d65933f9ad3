package importer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"dshmem/events"
	"dshmem/markdown"
	"dshmem/observer"
	"dshmem/observer/dsh"
	"dshmem/observer/metrics"
)

// WatchCursorFile is the watcher's cursor inside the memory root: for
// each host session log it followed, the offset just after the last whole
// frame (or line) whose events are durably in the log. Part of the
// on-disk layout; do not change.
//
//	{"version":1,"files":{"/home/u/.dsh/sessions/--proj--/s1/session.jsonl.zstd":1234}}
//
// It is written atomically after each intake, so a restart resumes at
// the last acknowledged frame. A crash between the intake and the write
// makes the watcher read a few frames again; their ids
// (dsh:<session>:<seq>) are already in the log, so intake drops them.
const WatchCursorFile = "dsh-watch.json"

type watchCursor struct {
	Version int              `json:"version"`
	Files   map[string]int64 `json:"files"`
}

// WatchOptions configure a Watcher. The zero value works.
type WatchOptions struct {
	Interval time.Duration // between scans (0: 250ms)
	Batch    int           // envelopes per intake call (0: DefaultImportBatch)
	// Observe, when set, is given the envelopes each scan appended, as
	// the log holds them: redacted, with their streams and seqs (the
	// packet broker watches them).
	Observe func([]events.Envelope)
	Logf    func(format string, args ...any)
	Metrics *metrics.Metrics
}

// Watcher follows the DSH host's sessions root: new sessions, frames
// appended to live ones, and a newer format generation of a session. A
// half-written last frame is waited for. Every envelope is mapped by
// observer/dsh exactly as `import dsh` maps it and goes through the
// ordinary intake. The watcher only reads host files: it never writes,
// renames or locks them.
type Watcher struct {
	eng  *observer.Engine
	dir  string
	opts WatchOptions

	mu      sync.Mutex
	files   map[string]*dsh.Follower
	cursor  watchCursor
	failing map[string]string // path → last error reported, so it is logged once
}

// NewWatcher prepares a watcher of dir (the host's sessions root) that
// ingests into e, resuming at the offsets of the root's cursor file.
func NewWatcher(e *observer.Engine, dir string, opts WatchOptions) (*Watcher, error) {
	if opts.Interval <= 0 {
		opts.Interval = 250 * time.Millisecond
	}
	if opts.Batch <= 0 {
		opts.Batch = DefaultImportBatch
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.Metrics == nil {
		opts.Metrics = metrics.New()
	}
	w := &Watcher{eng: e, dir: dir, opts: opts, files: map[string]*dsh.Follower{},
		cursor: watchCursor{Version: 1, Files: map[string]int64{}}, failing: map[string]string{}}
	b, err := os.ReadFile(filepath.Join(e.Root(), WatchCursorFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read watch cursor: %w", err)
	default:
		if err := json.Unmarshal(b, &w.cursor); err != nil || w.cursor.Version != 1 {
			// A cursor that cannot be read only costs a re-read: intake
			// drops every id it already holds.
			opts.Logf("watch cursor %s unreadable (%v); reading every host log from its start", WatchCursorFile, err)
			w.cursor = watchCursor{Version: 1, Files: map[string]int64{}}
		}
		if w.cursor.Files == nil {
			w.cursor.Files = map[string]int64{}
		}
	}
	return w, nil
}

// Run scans at once and then every Interval until ctx ends. It does not
// scan after ctx ends: Server.Shutdown scans once more after Run returns,
// so that what the host wrote before the stop is not left behind.
func (w *Watcher) Run(ctx context.Context) {
	t := time.NewTicker(w.opts.Interval)
	defer t.Stop()
	for {
		if _, err := w.Scan(ctx); err != nil && ctx.Err() == nil {
			w.opts.Logf("watch %s: %v", w.dir, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Scan reads what the host appended since the last scan and ingests it.
// It returns how many envelopes were appended. Errors of one file are
// logged and counted and do not stop the others; the error is non-nil
// only when intake failed.
func (w *Watcher) Scan(ctx context.Context) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := os.Stat(w.dir); errors.Is(err, os.ErrNotExist) {
		return 0, nil // the host has not run yet
	}
	paths, err := dsh.FindSessions(w.dir)
	if err != nil {
		return 0, err
	}
	live := map[string]bool{}
	for _, p := range paths {
		live[p] = true
	}
	// A session directory that gained a newer generation lists only the
	// new file: drop the follower of the old one. Its cursor stays, in
	// case the host goes back to it.
	for p := range w.files {
		if !live[p] {
			delete(w.files, p)
		}
	}
	appended := 0
	dirty := false
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			break
		}
		n, moved, err := w.scanFile(ctx, p)
		appended += n
		dirty = dirty || moved
		if err != nil {
			if dirty {
				w.saveCursor()
			}
			return appended, err
		}
	}
	if dirty {
		if err := w.saveCursor(); err != nil {
			return appended, err
		}
	}
	return appended, nil
}

func (w *Watcher) report(path string, err error) {
	msg := err.Error()
	if w.failing[path] == msg {
		return
	}
	w.failing[path] = msg
	w.opts.Metrics.WatchErrors.Add(1)
	w.opts.Logf("follow %s: %v", path, err)
}

// scanFile polls one session log. moved says the cursor changed.
func (w *Watcher) scanFile(ctx context.Context, path string) (appended int, moved bool, err error) {
	f := w.files[path]
	if f == nil {
		f = dsh.NewFollower(path, w.cursor.Files[path])
		w.files[path] = f
	}
	evs, perr := f.Poll()
	if perr != nil && (errors.Is(perr, dsh.ErrShrunk) || errors.Is(perr, dsh.ErrNotBoundary)) {
		// The file is not the one the cursor was saved for (rewritten or
		// replaced): read it again from its start; intake drops the ids
		// it already holds.
		w.report(path, fmt.Errorf("%w; reading it again from the start", perr))
		f = dsh.NewFollower(path, 0)
		w.files[path] = f
		evs, perr = f.Poll()
	}
	if perr != nil {
		w.report(path, perr) // a torn tail is not an error; this is damage
	} else {
		delete(w.failing, path)
	}
	if len(evs) > 0 {
		lines, err := watchLines(f.Header(), evs)
		if err != nil {
			return 0, false, err
		}
		w.opts.Metrics.WatchEvents.Add(uint64(len(lines)))
		for start := 0; start < len(lines); start += w.opts.Batch {
			end := min(start+w.opts.Batch, len(lines))
			_, outs, err := w.eng.Ingest(ctx, lines[start:end])
			if w.opts.Observe != nil {
				var ok []events.Envelope
				for _, o := range outs {
					if o.Status == observer.StatusAppended && o.Event != nil {
						ok = append(ok, *o.Event)
					}
				}
				if len(ok) > 0 {
					w.opts.Observe(ok)
				}
			}
			for _, o := range outs {
				switch o.Status {
				case observer.StatusAppended:
					appended++
					w.opts.Metrics.EventsAppended.Add(1)
				case observer.StatusDuplicate:
					w.opts.Metrics.EventsDuplicate.Add(1)
				case observer.StatusRejected:
					w.opts.Metrics.EventsRejected.Add(1)
					w.opts.Logf("follow %s: event %s refused: %v", path, o.ID, o.Error)
				}
			}
			if err != nil {
				// Not acknowledged: forget this follower so the next scan
				// starts again from the saved cursor.
				delete(w.files, path)
				return appended, false, fmt.Errorf("ingest events of %s: %w", path, err)
			}
		}
	}
	if off := f.Offset(); off != w.cursor.Files[path] && (off > 0 || w.cursor.Files[path] != 0) {
		w.cursor.Files[path] = off
		moved = true
	}
	return appended, moved, nil
}

// watchLines applies to a followed session what `import dsh` applies to
// a file (importSession): a cwd that is not absolute names no workspace,
// so its events go to the global stream with the host's cwd kept on
// session/start; an event too large for intake has its text cut.
func watchLines(h *dsh.Header, evs []events.Envelope) ([][]byte, error) {
	dropCwd := h != nil && h.Cwd != "" && !observer.IsAbsCwd(h.Cwd)
	lines := make([][]byte, 0, len(evs))
	for i := range evs {
		ev := evs[i]
		if dropCwd {
			ev.Cwd = ""
			if ev.Type == events.TypeSessionStart {
				ev.Data = withHostCwd(ev.Data, h.Cwd)
			}
			evs[i].Cwd = ""
		}
		line, _, err := marshalFit(&ev)
		if err != nil {
			return nil, err
		}
		lines = append(lines, line)
	}
	return lines, nil
}

// saveCursor writes the cursor file atomically; keys are written sorted
// (encoding/json sorts map keys), so the same state gives the same bytes.
func (w *Watcher) saveCursor() error {
	b, err := json.Marshal(w.cursor)
	if err != nil {
		return fmt.Errorf("encode watch cursor: %w", err)
	}
	if err := markdown.WriteFileAtomic(filepath.Join(w.eng.Root(), WatchCursorFile), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("save watch cursor: %w", err)
	}
	return nil
}
