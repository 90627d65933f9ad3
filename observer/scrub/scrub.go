package scrub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"dshmem/events"
	"dshmem/markdown"
	"dshmem/observer"
	"dshmem/projector"
	"dshmem/replay"
	"dshmem/sqlstore"
)

// Options configure Run. The zero value works.
type Options struct {
	// Sources also blanks the events the forgotten entries were learnt
	// from (their provenance event ids): the user's messages, the
	// explicit remember.
	Sources bool
	// DryRun says what would change and changes nothing.
	DryRun bool
	// Progress, when set, is told what the scrub is doing: a phase
	// ("read", "rewrite", "rebuild", "index", "files", "verify") and, for
	// the long ones, how far it is.
	Progress func(phase string, done, total uint64)
	// Step, when set, is called after each durable step, with its name:
	// "journal", "segment-written", "segment-renamed", "segment-synced",
	// "log", "rebuilt", "index", "files", "vacuum", "done". A crash test
	// stops the process there (cmd/dshmem's DSHMEM_TEST_SCRUB_PAUSE).
	Step func(step string)
}

// Report says what a scrub did (or, with DryRun, would do). Its JSON
// form is what `dshmem scrub --json` prints and POST /v1/scrub returns.
type Report struct {
	DryRun  bool           `json:"dryRun"`
	Resumed bool           `json:"resumed"` // an interrupted scrub's journal was found and finished
	Entries int            `json:"entries"` // forgotten entries scrubbed
	Sources bool           `json:"sources"`
	Streams []StreamReport `json:"streams"`
	// Totals over Streams.
	Segments    int   `json:"segments"`
	Events      int   `json:"events"`
	BytesBefore int64 `json:"bytesBefore"` // of the segments rewritten
	BytesAfter  int64 `json:"bytesAfter"`
	// IndexBytesBefore and IndexBytesAfter are index.db's size.
	IndexBytesBefore int64 `json:"indexBytesBefore"`
	IndexBytesAfter  int64 `json:"indexBytesAfter"`
	// Files counts the projection files rewritten or removed; Held the
	// ones left as they are because they hold a hand edit not synced.
	Files int      `json:"files"`
	Held  []string `json:"held,omitempty"`
	// Scrubbed lists the seqs of the log now in scrubbed batches, as
	// verify found them after the rewrite.
	Scrubbed []string `json:"scrubbed,omitempty"`
}

// StreamReport is what a scrub did to one stream.
type StreamReport struct {
	Stream      string `json:"stream"`
	Segments    int    `json:"segments"`
	Events      int    `json:"events"`
	BytesBefore int64  `json:"bytesBefore"`
	BytesAfter  int64  `json:"bytesAfter"`
	Sealed      bool   `json:"sealed"` // its active segment was sealed to be rewritten
	Broken      int    `json:"broken"` // .broken copies of torn tails rewritten
}

// ErrHandEdit is returned (wrapped) when a projection holds a hand edit
// not yet synced: a scrub rewrites the projections, and would lose it.
var ErrHandEdit = errors.New("scrub: a projection holds a hand edit not synced")

// rebuildDir is where a scrub rebuilds the index and the files, inside
// the root (so it is on the same file system), removed at the end.
const rebuildDir = "scrub-rebuild"

// running lets one scrub run at a time in a process.
var running sync.Mutex

// Run scrubs the forgotten entries of eng's root from disk: it rewrites
// the log (Log.Rewrite) so that no event holds their text, rebuilds the
// index and every projection from the rewritten log, puts the rebuilt
// index in place of the live one (SQLite's backup API, one transaction)
// and its files in place of the live ones, VACUUMs the index, and
// verifies the log. eng keeps serving meanwhile; intake waits only while
// the rebuilt index and files are put in place.
//
// A journal (JournalFile) holds the plan from before the first segment
// is rewritten until everything is rebuilt; a scrub that finds one (a
// crash interrupted the last) merges its plan and finishes the job.
func Run(ctx context.Context, eng *observer.Engine, opts Options) (Report, error) {
	rep := Report{DryRun: opts.DryRun, Sources: opts.Sources}
	if eng.ReadOnly() {
		return rep, observer.ErrReadOnly
	}
	running.Lock()
	defer running.Unlock()
	root := eng.Root()
	step := func(name string) {
		if opts.Step != nil {
			opts.Step(name)
		}
	}
	progress := func(phase string, done, total uint64) {
		if opts.Progress != nil {
			opts.Progress(phase, done, total)
		}
	}

	progress("read", 0, 0)
	p, err := buildPlan(ctx, eng, opts.Sources)
	if err != nil {
		return rep, err
	}
	old, err := readJournal(root)
	if err != nil {
		return rep, err
	}
	if old != nil {
		p.merge(old)
		rep.Resumed = true
	}
	p.finish()
	rep.Entries, rep.Sources = len(p.Entries), p.Sources
	if p.empty() && old == nil {
		return rep, nil
	}
	held, err := heldFiles(ctx, eng, p)
	if err != nil {
		return rep, err
	}
	if len(held) > 0 && !opts.DryRun {
		return rep, fmt.Errorf("%w: %s; run 'dshmem sync' first (it reads the edit into the log), then scrub", ErrHandEdit, strings.Join(held, ", "))
	}
	rep.Held = held
	if info, err := os.Stat(filepath.Join(root, sqlstore.IndexFile)); err == nil {
		rep.IndexBytesBefore = info.Size()
	}

	lg := eng.Log()
	streams := slices.Sorted(func(yield func(string) bool) {
		for name := range p.Streams {
			if !yield(name) {
				return
			}
		}
	})
	if !opts.DryRun {
		if err := writeJournal(root, p); err != nil {
			return rep, err
		}
		step("journal")
	}
	for i, name := range streams {
		progress("rewrite", uint64(i), uint64(len(streams)))
		rr, err := lg.Rewrite(ctx, name, p.rewriter(name), events.RewriteOptions{
			DryRun: opts.DryRun,
			Step:   func(s, _ string) { step("segment-" + s) },
		})
		if err != nil {
			return rep, fmt.Errorf("scrub: %w", err)
		}
		rep.add(rr)
	}
	if opts.DryRun {
		return rep, nil
	}
	if rep.Events == 0 && rep.brokenCopies() == 0 && !rep.Resumed {
		// Nothing of the log changed (a scrub ran before): the index was
		// rebuilt from this very log then.
		return rep, removeJournal(root)
	}
	step("log")

	if err := rebuild(ctx, eng, p, &rep, progress, step); err != nil {
		return rep, err
	}
	if info, err := os.Stat(filepath.Join(root, sqlstore.IndexFile)); err == nil {
		rep.IndexBytesAfter = info.Size()
	}

	progress("verify", 0, 0)
	problems, checked, err := lg.Verify(ctx)
	if err != nil {
		return rep, fmt.Errorf("scrub: verify the log: %w", err)
	}
	if len(problems) > 0 {
		return rep, fmt.Errorf("scrub: the log does not verify after the rewrite (%s); run 'dshmem verify'", problems[0])
	}
	for _, r := range checked.Scrubbed {
		rep.Scrubbed = append(rep.Scrubbed, r.String())
	}
	if err := removeJournal(root); err != nil {
		return rep, err
	}
	step("done")
	return rep, nil
}

func (r *Report) brokenCopies() int {
	n := 0
	for _, s := range r.Streams {
		n += s.Broken
	}
	return n
}

func (r *Report) add(rr events.RewriteReport) {
	if len(rr.Segments) == 0 && rr.Broken == 0 {
		return
	}
	sr := StreamReport{Stream: rr.Stream, Segments: len(rr.Segments), Events: rr.Events, Sealed: rr.Sealed, Broken: rr.Broken}
	for _, s := range rr.Segments {
		sr.BytesBefore += s.Before
		sr.BytesAfter += s.After
	}
	r.Streams = append(r.Streams, sr)
	r.Segments += sr.Segments
	r.Events += sr.Events
	r.BytesBefore += sr.BytesBefore
	r.BytesAfter += sr.BytesAfter
}

// rebuild folds the rewritten log into a new index and new files beside
// the root, then, with intake held (Engine.Settled), folds what was
// appended meanwhile, puts the index in place of the live one and the
// files in place of the live ones, and VACUUMs the index.
func rebuild(ctx context.Context, eng *observer.Engine, p *plan, rep *Report, progress func(string, uint64, uint64), step func(string)) error {
	root := eng.Root()
	dir := filepath.Join(root, rebuildDir)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("scrub: remove %s: %w", dir, err)
	}
	defer os.RemoveAll(dir)
	_, err := replay.Rebuild(ctx, eng.Log(), dir, replay.Options{Progress: func(_ string, _ uint64, done, total uint64) {
		progress("rebuild", done, total)
	}})
	if err != nil {
		return fmt.Errorf("scrub: rebuild the index from the rewritten log: %w", err)
	}
	step("rebuilt")
	progress("index", 0, 0)
	return eng.Settled(func() error {
		// What intake appended while the rebuild ran.
		st, err := sqlstore.Open(filepath.Join(dir, sqlstore.IndexFile))
		if err != nil {
			return fmt.Errorf("scrub: %w", err)
		}
		pj := projector.New(st)
		pj.Root = dir
		err = pj.CatchUp(ctx, eng.Log(), nil)
		if err == nil {
			err = st.CheckpointAll(ctx)
		}
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("scrub: catch the rebuilt index up: %w", err)
		}
		// Write what the live projector has queued, so its file writer
		// has nothing left to write over the files put in place below.
		if err := eng.WriteFiles(ctx); err != nil {
			return fmt.Errorf("scrub: %w", err)
		}
		held, err := heldFiles(ctx, eng, p)
		if err != nil {
			return err
		}
		// Once the index is replaced, the files table names the new
		// bytes: say in the journal which bytes on disk are dshmem's.
		if err := recordFiles(eng.Root(), p, held); err != nil {
			return err
		}
		if err := writeJournal(root, p); err != nil {
			return err
		}
		if err := eng.Store().ReplaceWith(ctx, filepath.Join(dir, sqlstore.IndexFile)); err != nil {
			return fmt.Errorf("scrub: %w", err)
		}
		// The rebuilt index has no vectors (none of erased text): the
		// background fill makes them again from what is left.
		eng.KickVectors()
		step("index")
		progress("files", 0, 0)
		n, err := replaceFiles(root, dir, held)
		if err != nil {
			return fmt.Errorf("scrub: %w", err)
		}
		rep.Files, rep.Held = n, held
		d, err := scrubDamaged(root, p)
		if err != nil {
			return fmt.Errorf("scrub: %w", err)
		}
		rep.Files += d
		step("files")
		if err := eng.Store().Vacuum(ctx); err != nil {
			return fmt.Errorf("scrub: %w", err)
		}
		step("vacuum")
		return nil
	})
}

// recordFiles adds the sha256 of every projection file on disk but the
// held ones to the plan's Files.
func recordFiles(root string, p *plan, held []string) error {
	have, err := replay.ProjectionFiles(root)
	if err != nil {
		return fmt.Errorf("scrub: %w", err)
	}
	for _, rel := range have {
		if slices.Contains(held, rel) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return fmt.Errorf("scrub: %w", err)
		}
		p.addFile(rel, projector.SHA256(b))
	}
	return nil
}

// heldFiles lists the projection files whose bytes on disk are not what
// the index says dshmem wrote there, nor what an interrupted scrub's
// journal says it had: hand edits not synced yet.
func heldFiles(ctx context.Context, eng *observer.Engine, p *plan) ([]string, error) {
	rows, err := eng.Projector().Files(ctx)
	if err != nil {
		return nil, fmt.Errorf("scrub: read the files table: %w", err)
	}
	var held []string
	for _, f := range rows {
		b, err := os.ReadFile(filepath.Join(eng.Root(), filepath.FromSlash(f.Path)))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("scrub: %w", err)
		}
		if sum := projector.SHA256(b); sum != f.SHA256 && !slices.Contains(p.Files[f.Path], sum) {
			held = append(held, f.Path)
		}
	}
	return held, nil
}

// replaceFiles makes the projection files of root those of dir: each
// one that differs is written (atomically), each one dir does not have
// is removed, except the held ones. It returns how many it changed.
func replaceFiles(root, dir string, held []string) (int, error) {
	want, err := replay.ProjectionFiles(dir)
	if err != nil {
		return 0, err
	}
	have, err := replay.ProjectionFiles(root)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, rel := range want {
		if slices.Contains(held, rel) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return n, err
		}
		abs := filepath.Join(root, filepath.FromSlash(rel))
		if cur, err := os.ReadFile(abs); err == nil && bytes.Equal(cur, b) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			return n, err
		}
		if err := markdown.WriteFileAtomic(abs, b, projector.FileMode); err != nil {
			return n, err
		}
		n++
	}
	for _, rel := range have {
		if slices.Contains(want, rel) || slices.Contains(held, rel) {
			continue
		}
		abs := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.Remove(abs); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, err
		}
		if err := markdown.SyncDir(filepath.Dir(abs)); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// damagedSuffix names the copy sync keeps of a projection it found
// damaged (observer/handedit.DamagedSuffix): a person's bytes, never
// rebuilt, so the scrub replaces the forgotten texts in it in place.
const damagedSuffix = ".damaged"

// scrubDamaged replaces every needle of every stream in the .damaged
// copies under root, and returns how many it rewrote.
func scrubDamaged(root string, p *plan) (int, error) {
	var pairs []string
	for _, name := range slices.Sorted(maps.Keys(p.Streams)) {
		for _, n := range p.Streams[name].Needles {
			pairs = append(pairs, n, Marker)
		}
	}
	if len(pairs) == 0 {
		return 0, nil
	}
	r := strings.NewReplacer(pairs...)
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (path == filepath.Join(root, observer.LogDir) || path == filepath.Join(root, rebuildDir)) {
			return fs.SkipDir
		}
		if d.IsDir() || !d.Type().IsRegular() || !strings.HasSuffix(d.Name(), damagedSuffix) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out := r.Replace(string(b))
		if out == string(b) {
			return nil
		}
		n++
		return markdown.WriteFileAtomic(path, []byte(out), projector.FileMode)
	})
	return n, err
}
