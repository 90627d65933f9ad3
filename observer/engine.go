package observer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"dshmem/events"
	"dshmem/markdown"
	"dshmem/projector"
	"dshmem/sqlstore"
)

// Options configure an Engine. The zero value works.
type Options struct {
	// Log is passed to events.OpenLog (segment size, batch size, FS seam).
	Log events.Options
	// ReadOnly opens the index without the writer lock and without
	// touching the log: for audit queries and search while another
	// process writes.
	ReadOnly bool
	// Progress, when set, is told about catch-up on open.
	Progress func(stream string, seq uint64)
	// FilesInterval is the least time between two writes of the Markdown
	// files (each write renders every group queued since the last one);
	// 0 means DefaultFilesInterval; < 0 holds them until WriteFiles or
	// Close (tests that crash a writer before its files are written).
	FilesInterval time.Duration
	// Files is the file-system seam of the Markdown files' writes (fault
	// tests); nil means the operating system.
	Files markdown.FS
	// IndexFault injects index write faults (sqlstore.Fault; fault
	// tests only).
	IndexFault *sqlstore.Fault
}

// Engine is one open root: the writer lock, the log, the index and the
// projector that keeps the index in step with the log.
type Engine struct {
	root  string
	lock  *rootLock
	log   *events.Log
	store *sqlstore.Store
	proj  *projector.Projector
	red   *Redactor

	// rebuilt names why the index was rebuilt on open, if it was.
	rebuilt string

	// scopes caches resolved working directories (workspace.go).
	scopes scopeCache

	// Folding is pipelined with intake: a call queues its appends under
	// mu, takes a ticket, releases mu, waits for its fsync and folds in
	// ticket order, so concurrent calls share one fsync (the log's group
	// commit) and the next call's dedupe overlaps this call's fold. The
	// first caller whose turn has come folds every ready call after it in
	// the same transaction (foldReady). What is appended but not yet
	// folded is in pendingIDs/pendingCwd, so dedupe and stream resolution
	// still see it.
	foldMu     sync.Mutex
	foldCond   *sync.Cond
	nextTicket uint64               // guarded by foldMu; taken under mu
	foldTurn   uint64               // guarded by foldMu
	folding    bool                 // guarded by foldMu: a caller is folding
	foldBehind bool                 // owned by the caller folding: a fold failed, the index is behind the log
	unfolded   []events.Envelope    // owned by the caller folding: the events of failed folds, still pending
	foldSlots  map[uint64]*foldSlot // guarded by foldMu: calls ready to fold
	// The wait of the caller whose turn has come for the calls before
	// it (gather), guarded by foldMu: the timer that wakes the waiters
	// when it ends, the ticket it waits up to, and when it ends.
	gatherTimer  *time.Timer
	gatherTarget uint64
	gatherUntil  time.Time
	pendMu       sync.Mutex
	pendingIDs   map[string]map[string]string // stream → id → content (eventContent) of events appended, not yet folded
	pendingCwd   map[string]string            // session → cwd appended, not yet folded

	// mu serializes intake: dedupe, append and fold happen as one step
	// so that two callers can never both append the same id.
	mu sync.Mutex

	// files writes the Markdown projections off the intake's path.
	files   *fileWriter
	vectors vectorState // the sentence encoder's vectors (vectors.go)
	forgets forgetClock // when this process appended forgets (forgets.go)
}

// ErrReadOnly is returned by every write (intake, checkpoint, sync,
// remember, forget) of an engine opened with Options.ReadOnly.
var ErrReadOnly = errors.New("engine is read-only")

// Paths inside a root. Part of the on-disk layout (ARCHITECTURE §2).
const LogDir = "log"

// Open opens (creating when needed) the root for writing: it takes the
// writer lock, opens the log (repairing a torn tail), opens the index
// (applying migrations) and folds whatever the log holds beyond the
// index's cursors.
func Open(ctx context.Context, root string, opts Options) (*Engine, error) {
	if opts.ReadOnly {
		st, err := sqlstore.OpenReadOnly(filepath.Join(root, sqlstore.IndexFile))
		if err != nil {
			return nil, fmt.Errorf("open index read-only: %w", err)
		}
		return &Engine{root: root, store: st}, nil
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("create root %s: %w", root, err)
	}
	lk, err := lockRoot(root)
	if err != nil {
		return nil, err
	}
	e := &Engine{root: root, lock: lk, red: NewRedactor(),
		pendingIDs: map[string]map[string]string{}, pendingCwd: map[string]string{}, foldSlots: map[uint64]*foldSlot{}}
	e.foldCond = sync.NewCond(&e.foldMu)
	// A salvage a crash interrupted is finished first (quarantine.go).
	if _, err := finishSalvages(root); err != nil {
		e.Close()
		return nil, err
	}
	if e.store, err = sqlstore.OpenWith(filepath.Join(root, sqlstore.IndexFile), sqlstore.OpenOptions{Fault: opts.IndexFault}); err != nil {
		e.Close()
		return nil, fmt.Errorf("open index: %w", err)
	}
	// What the index folded was fsynced before it was folded: the log's
	// recovery checks those batches by their headers only (a crash tears
	// only what came after), which keeps open cheap on a large root.
	logOpts := opts.Log
	if logOpts.Trusted == nil {
		if logOpts.Trusted, err = e.store.Cursors(); err != nil {
			e.Close()
			return nil, fmt.Errorf("read index cursors: %w", err)
		}
	}
	if e.log, err = events.OpenLog(filepath.Join(root, LogDir), logOpts); err != nil {
		e.Close()
		return nil, fmt.Errorf("open log: %w", err)
	}
	// A purge a crash interrupted took its stream out of the log: its
	// rows go before the cursors are compared with the log.
	early := projector.New(e.store)
	early.Root = root
	interrupted, err := e.finishPurges(ctx, early)
	if err != nil {
		e.Close()
		return nil, err
	}
	if ahead, err := e.indexAhead(); err != nil {
		e.Close()
		return nil, err
	} else if ahead != "" {
		// The index saw events the log no longer holds: someone cut an
		// acknowledged batch out of the log by hand. Folding on top of
		// that would skip the next events with those seqs, so the
		// derived index is dropped and rebuilt from the log.
		e.rebuilt = ahead
		e.store.Close()
		e.store = nil
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(filepath.Join(root, sqlstore.IndexFile+suffix)); err != nil && !os.IsNotExist(err) {
				e.Close()
				return nil, fmt.Errorf("drop index that is ahead of the log: %w", err)
			}
		}
		if e.store, err = sqlstore.OpenWith(filepath.Join(root, sqlstore.IndexFile), sqlstore.OpenOptions{Fault: opts.IndexFault}); err != nil {
			e.Close()
			return nil, fmt.Errorf("open index: %w", err)
		}
	}
	e.proj = projector.New(e.store)
	e.proj.Root = root // the Markdown projections (projector/files.go)
	e.proj.FS = opts.Files
	// Folds commit and queue their files; the file writer writes them
	// (files.go), so an acknowledgement waits for the log's fsync and
	// the index commit only.
	e.proj.Defer = true
	if err := e.proj.CatchUp(ctx, quarantineSource{e.log}, opts.Progress); err != nil {
		e.Close()
		return nil, fmt.Errorf("catch up index from log: %w", err)
	}
	if err := e.proj.RepairFiles(ctx); err != nil {
		e.Close()
		return nil, fmt.Errorf("write Markdown projections: %w", err)
	}
	e.files = startFileWriter(e.proj, opts.FilesInterval)
	e.proj.OnQueued = e.files.kick
	if err := e.finishRecords(ctx, interrupted); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// indexAhead reports a stream whose index cursor is beyond the log's
// last seq, or "".
func (e *Engine) indexAhead() (string, error) {
	cursors, err := e.store.Cursors()
	if err != nil {
		return "", fmt.Errorf("read index cursors: %w", err)
	}
	streams := make([]string, 0, len(cursors))
	for s := range cursors {
		streams = append(streams, s)
	}
	sort.Strings(streams)
	for _, s := range streams {
		if _, ok := e.log.QuarantinedStream(s); ok {
			continue // its log reads only up to the damage; the index keeps what it folded
		}
		if last := e.log.LastSeq(s); cursors[s] > last {
			return fmt.Sprintf("index of stream %s was at seq %d but the log ends at seq %d", s, cursors[s], last), nil
		}
	}
	return "", nil
}

// Close writes the queued Markdown files, then flushes and closes the
// log, the index and the lock.
func (e *Engine) Close() error {
	var errs []error
	e.stopVectors()
	if e.files != nil {
		errs = append(errs, e.files.stop())
		e.files = nil
	}
	if e.log != nil {
		errs = append(errs, e.log.Close())
		e.log = nil
	}
	if e.store != nil {
		errs = append(errs, e.store.Close())
		e.store = nil
	}
	errs = append(errs, e.lock.release())
	return errors.Join(errs...)
}

// IngestResult counts what one intake call did. Its JSON form is what
// `dshmem ingest` prints.
type IngestResult struct {
	Appended   int `json:"appended"`
	Duplicates int `json:"duplicates"`
	Rejected   int `json:"rejected"`
}

// Outcome is the fate of one input event, in input order.
type Outcome struct {
	Line   int        `json:"line"`
	ID     string     `json:"id,omitempty"`
	Status string     `json:"status"` // appended | duplicate | rejected
	Stream string     `json:"stream,omitempty"`
	Seq    uint64     `json:"seq,omitempty"`
	Error  *LineError `json:"error,omitempty"`

	// Event is the envelope as appended, for an appended event: redacted,
	// with its stream and seq. What intake returns is what the log holds,
	// so a consumer (the packet broker) never sees the text as sent.
	Event *events.Envelope `json:"-"`
	// made is the entry an appended memory/remember made, as the index
	// holds it after the fold, when the fold knew it (FoldMade): a
	// remember returns it without reading it back.
	made *sqlstore.Entry
}

// Outcome statuses.
const (
	StatusAppended  = "appended"
	StatusDuplicate = "duplicate"
	StatusRejected  = "rejected"
)

// IngestReader reads JSONL envelopes (without seq) from r and ingests
// the valid ones. Invalid lines are reported in the outcomes and do not
// stop the others. The error is non-nil only when nothing could be
// decided for the input as a whole (too large, unreadable) or the log
// failed; events acknowledged before a log failure stay acknowledged.
func (e *Engine) IngestReader(ctx context.Context, r io.Reader) (IngestResult, []Outcome, error) {
	var lines [][]byte
	var nums []int
	err := SplitLines(r, func(lineNo int, line []byte) error {
		lines = append(lines, line)
		nums = append(nums, lineNo)
		return nil
	})
	if err != nil {
		return IngestResult{}, nil, err
	}
	return e.ingestLines(ctx, lines, nums)
}

// Ingest takes lines already split, one envelope each, as the HTTP API
// and the importers send them. Each is validated exactly like a line of
// `dshmem ingest`; Line in the outcomes is the 1-based position in lines.
func (e *Engine) Ingest(ctx context.Context, lines [][]byte) (IngestResult, []Outcome, error) {
	return e.ingestLines(ctx, lines, nil)
}

// ingestLines validates and redacts lines in parallel (both are pure and
// CPU-bound), then resolves, dedupes, appends and folds in order.
// nums are the input line numbers; nil means 1, 2, 3, ….
func (e *Engine) ingestLines(ctx context.Context, lines [][]byte, nums []int) (IngestResult, []Outcome, error) {
	if e.log == nil {
		return IngestResult{}, nil, ErrReadOnly
	}
	p := e.prepare(lines, nums)
	return e.ingest(ctx, p.items, p.out, nil)
}

type intakeItem struct {
	line    int
	env     events.Envelope
	outcome int
}

// queued is one stream's batch of a call, queued on the log.
type queued struct {
	stream string
	p      *events.Pending
	items  []int // indexes into the call's items, in batch order
}

func (e *Engine) ingest(ctx context.Context, items []intakeItem, out []Outcome, staged func()) (res IngestResult, _ []Outcome, err error) {
	e.mu.Lock()
	// The ticket is taken before anything is appended and always used,
	// so folds run in append order and a failed call never stalls the
	// ones after it.
	e.foldMu.Lock()
	ticket := e.nextTicket
	e.nextTicket++
	e.foldMu.Unlock()
	if staged != nil {
		staged()
	}
	qs, err := e.stage(ctx, items, out, &res)
	e.mu.Unlock()

	// The appends' order is fixed; wait for their fsync outside mu, so
	// the next call can queue behind them and share the fsync. The wait
	// ignores ctx: once queued, an event is written or failed, and
	// folding must learn its seq either way.
	var folded []events.Envelope
	for _, q := range qs {
		stamped, werr := q.p.Wait(context.WithoutCancel(ctx))
		if werr != nil {
			e.unmarkPending(q.stream, q.p)
			if err == nil {
				err = fmt.Errorf("append to stream %s: %w", q.stream, werr)
			}
			continue
		}
		own := stamped[len(stamped)-len(q.items):] // after a scope/register
		for k, i := range q.items {
			n := items[i].outcome
			out[n].Status = StatusAppended
			out[n].Stream = q.stream
			out[n].Seq = own[k].Seq
			out[n].Event = &own[k]
		}
		res.Appended += len(own)
		folded = append(folded, stamped...)
	}
	e.forgets.note(folded, time.Now())
	made, ferr := e.foldInTurn(ctx, ticket, folded)
	if ferr != nil && err == nil {
		err = fmt.Errorf("index events (they are safe in the log; the index catches up with the next write, or the next open): %w", ferr)
	}
	for n := range out {
		if ev := out[n].Event; made != nil && ev != nil && ev.Type == events.TypeMemoryRemember {
			if en, ok := made[projector.EntryID(ev.Stream, ev.Seq, 0)]; ok {
				out[n].made = &en
			}
		}
	}
	e.vectors.fill.kick() // the new text's vectors, in the background
	e.tally(&res, out)
	if err != nil && res.Appended == 0 && res.Duplicates == 0 && qs == nil {
		return res, nil, err
	}
	return res, out, err
}

// stage resolves streams, dedupes and queues the appends of one call.
// It runs under mu, which fixes the order of the queued batches.
func (e *Engine) stage(ctx context.Context, items []intakeItem, out []Outcome, res *IngestResult) ([]queued, error) {
	// Resolve streams. A session's cwd learnt earlier in this call wins
	// over the index, so a session/start and its messages may arrive
	// together. A workspace stream this call creates counts as existing
	// for the events after it (created: stream → its directory), and gets
	// a scope/register event first unless its first event's cwd is the
	// directory (workspace.go).
	sessCwd := map[string]string{}
	created := map[string]string{}
	resolved := map[string]Scope{} // cwd → scope, for this call: a new stream's events resolve once
	resolve := func(cwd string) Scope {
		sc, ok := resolved[cwd]
		if !ok {
			sc = e.resolveScope(cwd, created)
			resolved[cwd] = sc
		}
		return sc
	}
	for i := range items {
		env := &items[i].env
		if env.Cwd != "" && env.Session != "" {
			if _, ok := sessCwd[env.Session]; !ok {
				sessCwd[env.Session] = env.Cwd
			}
		}
	}
	for i := range items {
		env := &items[i].env
		n := items[i].outcome
		sc := ""
		if env.Cwd == "" && env.Session != "" {
			if c, ok := sessCwd[env.Session]; ok {
				sc = c
			} else if c, ok := e.pendingSessionCwd(env.Session); ok {
				sc = c
				sessCwd[env.Session] = c
			} else if c, ok, err := e.store.SessionCwd(ctx, env.Session); err != nil {
				return nil, fmt.Errorf("look up session %s: %w", env.Session, err)
			} else if ok {
				sc = c
				sessCwd[env.Session] = c
			}
		}
		scope, lerr := ResolveStream(env, sc, items[i].line, resolve)
		if lerr != nil {
			out[n].Status, out[n].Error = StatusRejected, lerr
			items[i].outcome = -1
			continue
		}
		env.Stream = scope.Stream
		if _, ok := created[scope.Stream]; !ok && scope.Dir != "" && IsWorkspaceStream(scope.Stream) && !e.HasStream(scope.Stream) {
			created[scope.Stream] = scope.Dir
		}
	}

	// Dedupe by id within each stream: against the index, and within
	// this call.
	byStream := map[string][]int{}
	var order []string
	for i, it := range items {
		if it.outcome < 0 {
			continue
		}
		s := it.env.Stream
		if _, ok := byStream[s]; !ok {
			order = append(order, s)
		}
		byStream[s] = append(byStream[s], i)
	}
	sort.Strings(order)
	var qs []queued
	for _, stream := range order {
		idx := byStream[stream]
		if e.refuseQuarantined(stream, idx, items, out) {
			continue
		}
		ids := make([]string, len(idx))
		for k, i := range idx {
			ids[k] = items[i].env.ID
		}
		// Pending first, then the index: a fold commits before it takes
		// its ids out of the pending set, so an id missing from the
		// snapshot is already visible in the index.
		pending := map[string]string{}
		e.pendMu.Lock()
		for _, id := range ids {
			if c, ok := e.pendingIDs[stream][id]; ok {
				pending[id] = c
			}
		}
		e.pendMu.Unlock()
		stored, err := e.store.ExistingEvents(ctx, stream, ids)
		if err != nil {
			return qs, fmt.Errorf("dedupe stream %s: %w", stream, err)
		}
		// seen: id → the content the log holds (or this call appends)
		// under it, and where.
		seen := map[string]heldID{}
		for id, ev := range stored {
			seen[id] = heldID{content: eventContent(ev.Type, ev.Time, ev.Session, ev.Data), seq: ev.Seq, stored: &ev}
		}
		for id, c := range pending {
			seen[id] = heldID{content: c}
		}
		var batch []events.Envelope
		var batchItems []int
		for _, i := range idx {
			env := &items[i].env
			if _, dup := seen[env.ID]; !dup {
				if dir, ok := created[stream]; ok && len(batch) == 0 && NormalizeCwd(env.Cwd) != dir {
					// The stream's first event does not name the scope's
					// directory (a session started in a subdirectory, or
					// an event without a cwd): record it first.
					batch = append(batch, registerEvent(stream, dir, env.Time))
				}
			}
			n := items[i].outcome
			content := eventContent(env.Type, env.Time, env.Session, string(env.Data))
			if held, dup := seen[env.ID]; dup {
				if !ownOperationID(env.ID) && !e.sameContent(held, content) {
					// An id is the idempotency key of one event: another
					// event under it would be silently dropped as a
					// duplicate. Refuse it, saying where the id is used.
					out[n].Status, out[n].Error = StatusRejected, reusedID(items[i].line, env.ID, stream, held.seq)
					continue
				}
				out[n].Status = StatusDuplicate
				out[n].Stream = stream
				res.Duplicates++
				continue
			}
			seen[env.ID] = heldID{content: content}
			batch = append(batch, *env)
			batchItems = append(batchItems, i)
		}
		if len(batch) == 0 {
			continue
		}
		p, err := e.log.Enqueue(ctx, stream, batch)
		if err != nil {
			return qs, fmt.Errorf("append to stream %s: %w", stream, err)
		}
		e.markPending(stream, batch)
		qs = append(qs, queued{stream: stream, p: p, items: batchItems})
	}
	return qs, nil
}

// markPending records appended events until they are folded.
func (e *Engine) markPending(stream string, evs []events.Envelope) {
	e.pendMu.Lock()
	defer e.pendMu.Unlock()
	ids := e.pendingIDs[stream]
	if ids == nil {
		ids = map[string]string{}
		e.pendingIDs[stream] = ids
	}
	for _, ev := range evs {
		ids[ev.ID] = eventContent(ev.Type, ev.Time, ev.Session, string(ev.Data))
		if ev.Session != "" && ev.Cwd != "" {
			if _, ok := e.pendingCwd[ev.Session]; !ok {
				e.pendingCwd[ev.Session] = ev.Cwd
			}
		}
	}
}

// unmarkPending forgets the ids of a queued batch whose commit failed:
// they are not in the log.
func (e *Engine) unmarkPending(stream string, p *events.Pending) {
	e.pendMu.Lock()
	defer e.pendMu.Unlock()
	for _, ev := range p.Events() {
		delete(e.pendingIDs[stream], ev.ID)
	}
}

func (e *Engine) pendingSessionCwd(session string) (string, bool) {
	e.pendMu.Lock()
	defer e.pendMu.Unlock()
	c, ok := e.pendingCwd[session]
	return c, ok
}

func (e *Engine) tally(res *IngestResult, out []Outcome) {
	res.Rejected = 0
	for _, o := range out {
		if o.Status == StatusRejected {
			res.Rejected++
		}
	}
}
