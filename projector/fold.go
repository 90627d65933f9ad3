package projector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"dshmem/events"
	"dshmem/markdown"
	"dshmem/sqlstore"
)

// ErrGap is wrapped by every *GapError.
var ErrGap = errors.New("projector: gap in stream")

// GapError says a fold got an event whose seq is past the stream's cursor
// + 1: the events in between were never folded, so folding this one would
// leave a hole the cursor could not describe.
type GapError struct {
	Stream string
	Cursor uint64 // last seq folded
	Seq    uint64 // seq of the event that came next
}

func (e *GapError) Error() string {
	return fmt.Sprintf("projector: stream %s: event seq %d follows cursor %d; seqs %d..%d were never folded (fold the stream from its cursor, e.g. with CatchUp)",
		e.Stream, e.Seq, e.Cursor, e.Cursor+1, e.Seq-1)
}

func (e *GapError) Unwrap() error { return ErrGap }

// Projector folds events into a store.
type Projector struct {
	s *sqlstore.Store

	// ChunkSize is the number of events CatchUp folds per transaction;
	// 0 means DefaultChunkSize.
	ChunkSize int

	// Root, when set, is the memory root: after each commit Fold writes
	// the Markdown projections the fold changed below it (files.go).
	Root string
	// Held, when set, is told about each projection file left as it is
	// because it holds a hand edit not yet captured (see put).
	Held func(path string)
	// FS is the file-system seam of the Markdown files' writes (a fault
	// test's); nil means the operating system.
	FS markdown.FS

	// Defer leaves the Markdown files of a fold queued (queue.go) for
	// WriteQueued instead of writing them before Fold returns, so the
	// caller acknowledges on the commit and writes files off its path;
	// OnQueued, if set, is called after each commit that queued some.
	Defer    bool
	OnQueued func()
	filesMu  sync.Mutex // serializes writing files (put)
	// txMu serializes this projector's write transactions (folds, the
	// files rows), so the file writer queues behind folds in Go instead
	// of starving on SQLite's busy handler while folds keep the lock.
	txMu sync.Mutex
	// keptTops are the summary tops of the last fold's workspaces as of
	// its commit (fileTrack.tops), for the next fold to place its
	// remembers into instead of reading the ranking again; keptGen is
	// the store's EntriesGen they were read at. Guarded by txMu.
	keptTops map[string]*summaryTop
	keptGen  uint64

	// Sparse lets a fold skip seqs: restore folds only the events that
	// change what one file shows, and the rest change nothing there.
	// Seqs must still rise. Never set for the index of a root.
	Sparse bool
	// Lost, when set, says whether seqs first..last of stream are lost
	// to damage (gap records `dshmem salvage` wrote): a fold steps over
	// them. CatchUp sets it from a Source that has it (events.Log.Lost).
	Lost func(stream string, first, last uint64) bool
}

// maxKeptTops caps the workspaces whose summary tops a projector keeps
// from one fold to the next.
const maxKeptTops = 64

// DefaultChunkSize balances transaction cost (a commit, the FTS5 segment
// flush) against memory held per fold.
const DefaultChunkSize = 10000

// New returns a projector writing to s.
func New(s *sqlstore.Store) *Projector { return &Projector{s: s} }

// Fold projects evs into the index in one transaction: their rows and the
// cursor of every stream they advance commit together or not at all.
//
// evs may hold several streams; each stream's events must come in seq
// order. An event whose seq is at or below its stream's cursor was folded
// before and is skipped, so folding the same events twice changes
// nothing. An event past cursor+1 is a *GapError and nothing of the call
// is committed. Folding never reads the clock: every timestamp comes from
// an event.
func (p *Projector) Fold(ctx context.Context, evs []events.Envelope) error {
	_, err := p.fold(ctx, evs, false)
	return err
}

// FoldMade is Fold, and returns the entries the fold's remembers made,
// by id, as the index holds them once it has committed: when every
// event of evs leaves the other entries as they were (keepsTops), so
// the row a remember inserted is the entry's state at the commit. When
// some event may change entries otherwise (a forget, memory ops, a
// scope's lifecycle) it returns nil, and a caller reads the index. A
// failed write of the Markdown files after the commit (without Defer)
// returns nil too, with the error.
func (p *Projector) FoldMade(ctx context.Context, evs []events.Envelope) (map[string]sqlstore.Entry, error) {
	return p.fold(ctx, evs, true)
}

// fold folds evs; with want it keeps the entries remembers made (Fold's
// callers, catch-up, rebuild and restore, do not pay for them).
func (p *Projector) fold(ctx context.Context, evs []events.Envelope, want bool) (made map[string]sqlstore.Entry, err error) {
	if len(evs) == 0 {
		return nil, nil
	}
	p.txMu.Lock()
	locked := true
	unlock := func() {
		if locked {
			locked = false
			p.txMu.Unlock()
		}
	}
	tx, err := p.s.BeginFold(ctx)
	if err != nil {
		unlock()
		return nil, fmt.Errorf("fold: begin: %w", err)
	}
	f := &fold{p: p, tx: tx, cursors: map[string]uint64{}, advanced: map[string]bool{}, sessions: map[sessionKey]*sessionAcc{}}
	if want {
		f.made = map[string]sqlstore.Entry{}
	}
	f.files = p.newFileTrack()
	// The summary tops the last fold left stay true while only folds
	// have written entries since (keptTops).
	gen := p.s.EntriesGen()
	if p.keptTops != nil && p.keptGen == gen {
		f.files.tops = p.keptTops
	}
	p.keptTops = nil
	pre := startPrepare(evs)
	defer func() {
		pre.stop()
		tx.Close() // rolls back unless committed
		unlock()
	}()
	if err := f.files.plan(evs, f.cursor); err != nil {
		return nil, err
	}
	for i := range evs {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("fold: %w", err)
			}
		}
		ev := &evs[i]
		pr := pre.get(i)
		if ev.Stream == "" || ev.Seq == 0 {
			return nil, fmt.Errorf("fold: event %q (type %s) has stream %q and seq %d; both are required", ev.ID, ev.Type, ev.Stream, ev.Seq)
		}
		cur, err := f.cursor(ev.Stream)
		if err != nil {
			return nil, err
		}
		if ev.Seq <= cur {
			continue
		}
		if ev.Seq != cur+1 && !p.Sparse && (p.Lost == nil || !p.Lost(ev.Stream, cur+1, ev.Seq-1)) {
			return nil, &GapError{Stream: ev.Stream, Cursor: cur, Seq: ev.Seq}
		}
		f.added = nil
		if err := f.files.before(f, ev); err != nil {
			return nil, fmt.Errorf("fold %s seq %d (%s, id %q): %w", ev.Stream, ev.Seq, ev.Type, ev.ID, err)
		}
		if err := f.apply(ev, pr); err != nil {
			return nil, fmt.Errorf("fold %s seq %d (%s, id %q): %w", ev.Stream, ev.Seq, ev.Type, ev.ID, err)
		}
		if !keepsTops(ev.Type) {
			f.made = nil // entries may have changed otherwise: the caller reads them
		}
		if err := f.files.track(f, ev); err != nil {
			return nil, fmt.Errorf("fold %s seq %d (%s, id %q): %w", ev.Stream, ev.Seq, ev.Type, ev.ID, err)
		}
		f.cursors[ev.Stream] = ev.Seq
		f.advanced[ev.Stream] = true
		if !f.timed || ev.Time < f.firstTime {
			f.firstTime, f.timed = ev.Time, true
		}
	}
	if err := f.finish(); err != nil {
		return nil, err
	}
	if err := f.files.queue(f); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("fold: commit: %w", err)
	}
	if f.files.on && p.s.EntriesGen() == gen && len(f.files.tops) <= maxKeptTops {
		p.keptTops, p.keptGen = f.files.tops, gen
	}
	unlock()
	made = f.made
	if !f.files.on || !f.files.global && len(f.files.scopes) == 0 && len(f.files.days) == 0 {
		return made, nil
	}
	if p.Defer {
		if p.OnQueued != nil {
			p.OnQueued()
		}
		return made, nil
	}
	if err := p.WriteQueued(ctx); err != nil {
		return nil, fmt.Errorf("fold committed: %w", err)
	}
	return made, nil
}

// fold is the state of one Fold call: its transaction (whose statements
// run without a cancellable context, see sqlstore.FoldTx: Fold checks
// its context between events), and what is aggregated until the end of
// the call.
type fold struct {
	p        *Projector
	tx       *sqlstore.FoldTx
	cursors  map[string]uint64
	advanced map[string]bool
	// firstTime is the least time of the fold's events (event_span),
	// once timed: "" included, as SQL's min(time) would have it.
	firstTime string
	timed     bool
	sessions  map[sessionKey]*sessionAcc
	files     *fileTrack
	// made are the entries the fold's remembers inserted, by id, while
	// no event may have changed entries otherwise (FoldMade); nil after.
	made map[string]sqlstore.Entry
	// added is the row the current event's remember inserted, if it did
	// (summaryText places it without reading it back); nil otherwise.
	added *sqlstore.EntryRow
}

func (f *fold) cursor(stream string) (uint64, error) {
	if c, ok := f.cursors[stream]; ok {
		return c, nil
	}
	seq, err := f.tx.Cursor(stream)
	if err != nil {
		return 0, fmt.Errorf("fold: %w", err)
	}
	f.cursors[stream] = seq
	return seq, nil
}

// apply folds one event: its events row, then whatever projection its
// type feeds. A new type gets a case here and a file of its own.
func (f *fold) apply(ev *events.Envelope, p *prepared) error {
	n, err := f.tx.InsertEvent(&sqlstore.Event{Stream: ev.Stream, Seq: ev.Seq, ID: ev.ID, Type: ev.Type,
		Time: ev.Time, Session: ev.Session, Data: ev.Data})
	if err != nil {
		return err
	}
	f.session(ev, p)
	switch ev.Type {
	case events.TypeUserMessage, events.TypeAssistantMessage, events.TypeToolResult,
		events.TypeCompactionSummary, events.TypeTaskEnd:
		return f.episode(n, p)
	case events.TypeMemoryRemember:
		return f.remember(ev)
	case events.TypeMemoryForget:
		return f.forget(ev)
	case events.TypeMemoryShown:
		return f.shown(ev)
	case events.TypeMemoryOps:
		return f.ops(ev)
	case events.TypeScopeArchive, events.TypeScopeRestore:
		return f.lifecycle(ev)
	case events.TypeMaintenanceRotate:
		return f.rotate(ev) // rotation.go
	}
	return nil
}

// finish writes what was aggregated over the call: sessions, then the
// cursor of every stream that advanced, in sorted order.
func (f *fold) finish() error {
	if err := f.flushSessions(); err != nil {
		return err
	}
	streams := make([]string, 0, len(f.advanced))
	for s := range f.advanced {
		streams = append(streams, s)
	}
	slices.Sort(streams)
	for _, s := range streams {
		if err := f.tx.SetCursor(s, f.cursors[s]); err != nil {
			return fmt.Errorf("fold: %w", err)
		}
	}
	if f.timed {
		if err := f.tx.NoteEventTime(f.firstTime); err != nil {
			return fmt.Errorf("fold: %w", err)
		}
	}
	return nil
}

// prepareChunk is how many events the preparing goroutine hands over at
// a time; small folds (live ingest) are prepared inline.
const prepareChunk = 256

// preparer runs prepareEvent over a fold's events on a second goroutine,
// in order, so that JSON decoding and tokenizing overlap with SQLite's
// inserts (on two cores, most of the fold's non-SQLite CPU). Results are
// read in event order, so the fold stays deterministic.
type preparer struct {
	out   []prepared
	ready chan int      // receives the end of each prepared chunk
	quit  chan struct{} // closed when the fold ends early
	done  chan struct{} // closed when the goroutine has returned
	upTo  int           // out[:upTo] is ready to read
}

func startPrepare(evs []events.Envelope) *preparer {
	p := &preparer{out: make([]prepared, len(evs))}
	if len(evs) <= prepareChunk {
		for i := range evs {
			p.out[i] = prepareEvent(&evs[i])
		}
		p.upTo = len(evs)
		return p
	}
	p.ready = make(chan int, len(evs)/prepareChunk+1)
	p.quit = make(chan struct{})
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		for start := 0; start < len(evs); start += prepareChunk {
			select {
			case <-p.quit:
				return
			default:
			}
			end := min(start+prepareChunk, len(evs))
			for i := start; i < end; i++ {
				p.out[i] = prepareEvent(&evs[i])
			}
			p.ready <- end // never blocks: the buffer holds every chunk
		}
	}()
	return p
}

// get returns the prepared form of event i, waiting for it if needed.
func (p *preparer) get(i int) *prepared {
	for i >= p.upTo {
		p.upTo = <-p.ready
	}
	return &p.out[i]
}

// stop ends the goroutine and waits for it: after Fold returns, nothing
// reads the caller's events any more.
func (p *preparer) stop() {
	if p.done == nil {
		return
	}
	close(p.quit)
	<-p.done
}
