package projector

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/markdown"
	"dshmem/sqlstore"
)

// FileMode is the mode of every projection file (the root itself is 0700).
const FileMode = 0o644

// File is one row of the files table: a projection as dshmem last wrote it.
type File struct {
	Path   string
	SHA256 string
	Bytes  int64
	FileMeta
	// Text is the content written, kept for the files sync reads back
	// (global.md, knowledge/*.md); "" for the others.
	Text string
}

// SHA256 returns the hex sha256 of b, as the files table records it.
func SHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// fileTrack is what one Fold call changed that the Markdown files show.
// It is filled while folding and queued (projection_queue) in the same
// transaction; the files are written after the commit (queue.go).
type fileTrack struct {
	on     bool // the projector has a Root: files and summary versions are kept
	global bool
	scopes map[string]bool
	days   map[string]bool
	scoped map[string]bool   // workspace streams whose scopes row this call wrote or saw
	last   map[string]string // stream → sha256 of its newest summary version, once read
	shown  map[string]int    // stream → its entry_counts.shown before the current event
	// unrendered are remembers whose summary version need not be
	// rendered: at least HistoryKeep later remembers of the call, each a
	// version, push it out of the kept set, and no other memory event
	// after it needs its text to compare with (plan).
	unrendered map[streamSeq]bool
	// versions are the summary versions the call made, per stream, oldest
	// first, at most HistoryKeep: written to summary_versions when the
	// call ends (writeVersions), so a group of remembers inserts each
	// kept version once and trims the table once, instead of an insert
	// and a trim per remember.
	versions map[string][]sqlstore.SummaryVersion
	// tops are the tops of summary rankings this call has rendered, per
	// stream, while no event has changed entries other than by a
	// remember (summaryText).
	tops map[string]*summaryTop
}

type streamSeq struct {
	stream string
	seq    uint64
}

// ChangesEntries reports whether an event of type typ may change entries:
// the memory/ events except memory/shown. Each such event of a workspace
// stream may make a summary version (summary_history/<seq>.md).
func ChangesEntries(typ string) bool {
	return strings.HasPrefix(typ, "memory/") && typ != events.TypeMemoryShown
}

func (p *Projector) newFileTrack() *fileTrack {
	return &fileTrack{
		on:         p.Root != "",
		scopes:     map[string]bool{},
		days:       map[string]bool{},
		scoped:     map[string]bool{},
		last:       map[string]string{},
		shown:      map[string]int{},
		unrendered: map[streamSeq]bool{},
		versions:   map[string][]sqlstore.SummaryVersion{},
		tops:       map[string]*summaryTop{},
	}
}

// track notes what a folded event changes in the files, records the
// cwd of a workspace the first time one is seen, and makes a summary
// version when the event changed the workspace summary's text. It runs
// inside the fold's transaction, after the event's rows are written, so
// it sees the index exactly as of this event.
func (t *fileTrack) track(f *fold, ev *events.Envelope) error {
	if !keepsTops(ev.Type) {
		clear(t.tops)
	}
	ws := IsWorkspace(ev.Stream)
	if ws {
		// A workspace's files show its entries and its cwd: render them
		// when the stream begins (as Refresh, and so a rebuild, renders
		// every stream folded at all, with or without a cwd), when an
		// event can change entries, or when the scope is new; not on
		// every fold of its conversation.
		if ev.Seq == 1 || ChangesEntries(ev.Type) || movesScope(ev.Type) {
			t.scopes[ev.Stream] = true
		}
		if dir, ok := registeredDir(ev); ok {
			// The engine's record of the scope's directory: it wins over
			// the first cwd seen (a session may start in a subdirectory).
			t.scoped[ev.Stream] = true
			if err := f.tx.RegisterScope(ev.Stream, dir, ev.Seq, ev.Time); err != nil {
				return err
			}
			t.scopes[ev.Stream] = true
		} else if ev.Cwd != "" && !t.scoped[ev.Stream] {
			t.scoped[ev.Stream] = true
			added, err := f.tx.RecordScopeCwd(ev.Stream, ev.Cwd, ev.Seq, ev.Time)
			if err != nil {
				return err
			}
			if added {
				t.scopes[ev.Stream] = true
			}
		}
	}
	if ev.Stream == globalStream && (ev.Seq == 1 || ChangesEntries(ev.Type)) {
		t.global = true
	}
	if day, _, ok := BlockOf(ev); ok {
		t.days[day] = true
	}
	if ws && t.on && ChangesEntries(ev.Type) {
		return t.version(f, ev)
	}
	return nil
}

// registeredDir returns the directory of a scope/register event
// ({"dir"}), which the engine writes first into each workspace stream it
// creates; ok is false for any other event and for one without a dir.
func registeredDir(ev *events.Envelope) (string, bool) {
	if ev.Type != events.TypeScopeRegister {
		return "", false
	}
	var d payload.ScopeRegister
	if payload.Unmarshal(ev.Data, &d) != nil || d.Dir == "" {
		return "", false
	}
	return d.Dir, true
}

// queue records, in the fold's transaction, the groups of files the fold
// changed.
func (t *fileTrack) queue(f *fold) error {
	if !t.on {
		return nil
	}
	if err := t.writeVersions(f); err != nil {
		return err
	}
	var keys []string
	if t.global {
		keys = append(keys, groupGlobal)
	}
	for _, s := range sortedKeys(t.scopes) {
		keys = append(keys, groupScope+s)
	}
	for _, d := range sortedKeys(t.days) {
		keys = append(keys, groupDay+d)
	}
	for _, k := range keys {
		if err := f.tx.QueueFiles(k); err != nil {
			return err
		}
	}
	return nil
}

// Refresh renders every projection the index holds and writes the files
// that differ from it, with the same care as after a fold. A rebuild
// ends with it (its folds only queue), and Open runs it for a root whose
// files table is empty (made before the files existed).
func (p *Projector) Refresh(ctx context.Context) error {
	if p.Root == "" {
		return nil
	}
	cursors, err := p.s.Cursors()
	if err != nil {
		return fmt.Errorf("refresh files: %w", err)
	}
	var keys []string
	if cursors[globalStream] > 0 {
		keys = append(keys, groupGlobal)
	}
	for _, scope := range sortedKeys(cursors) {
		if IsWorkspace(scope) && cursors[scope] > 0 {
			keys = append(keys, groupScope+scope)
		}
	}
	days, err := p.s.BlockDays(ctx)
	if err != nil {
		return fmt.Errorf("refresh files: %w", err)
	}
	for _, day := range days {
		keys = append(keys, groupDay+day)
	}
	if err := p.enqueue(ctx, keys); err != nil {
		return fmt.Errorf("refresh files: %w", err)
	}
	return p.WriteQueued(ctx)
}

// Rewrite renders the given projection paths from the index and writes
// them even though their bytes on disk differ from what dshmem wrote,
// provided those bytes still hash to the given sha256 (hex): sync calls
// it for files whose hand edit it has captured in the log, so an edit
// made after the capture is still never overwritten. A path the index
// no longer renders (a knowledge topic left without entries) is removed.
func (p *Projector) Rewrite(ctx context.Context, expect map[string]string) error {
	if p.Root == "" {
		return errors.New("projector: no root to write files to")
	}
	var rs []Rendered
	var gone []string
	for _, rel := range sortedKeys(expect) {
		r, ok, err := p.Render(ctx, rel)
		if err != nil {
			return err
		}
		if ok {
			rs = append(rs, r)
		} else {
			gone = append(gone, rel)
		}
	}
	p.filesMu.Lock()
	defer p.filesMu.Unlock()
	return p.put(ctx, rs, gone, expect, nil)
}

// put writes rs and removes gone, then records them in the files table
// and takes the queue rows done off projection_queue.
//
// A file is written only when its bytes on disk are what dshmem last
// wrote there (the files table's sha256, or the files_intent one of a
// write a crash interrupted), or it does not exist, or its bytes hash
// to force[path]. Anything else is a hand edit not yet captured: the
// file is left as it is, its row is not touched, and Held (if set) is
// told. Sync captures the edit and then calls Rewrite.
//
// Each file is written to a temporary file, fsynced and renamed over
// the old one; the directories are fsynced once each at the end, before
// the rows are committed. Callers hold filesMu.
func (p *Projector) put(ctx context.Context, rs []Rendered, gone []string, force map[string]string, done []sqlstore.QueuedGroup) error {
	if len(rs) == 0 && len(gone) == 0 && len(done) == 0 {
		return nil
	}
	type change struct {
		r      Rendered
		sum    string
		remove bool
		write  bool
	}
	var changes []change
	may := func(rel string, disk []byte) (bool, error) {
		row, intent, err := p.s.FileHashes(ctx, rel)
		if err != nil {
			return false, err
		}
		s := SHA256(disk)
		return s == row || s == intent || force != nil && force[rel] == s, nil
	}
	for _, r := range rs {
		abs := filepath.Join(p.Root, filepath.FromSlash(r.Path))
		sum := SHA256(r.Data)
		disk, err := os.ReadFile(abs)
		switch {
		case err == nil && SHA256(disk) == sum:
			// already there (written before a crash, or unchanged)
			changes = append(changes, change{r: r, sum: sum})
		case err == nil:
			ok, err := may(r.Path, disk)
			if err != nil {
				return err
			}
			if !ok {
				p.held(r.Path)
				continue
			}
			changes = append(changes, change{r: r, sum: sum, write: true})
		case errors.Is(err, fs.ErrNotExist):
			changes = append(changes, change{r: r, sum: sum, write: true})
		default:
			return fmt.Errorf("read %s: %w", r.Path, err)
		}
	}
	for _, rel := range gone {
		abs := filepath.Join(p.Root, filepath.FromSlash(rel))
		disk, err := os.ReadFile(abs)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			changes = append(changes, change{r: Rendered{Path: rel}, remove: true}) // the row only
		case err != nil:
			return fmt.Errorf("read %s: %w", rel, err)
		default:
			ok, err := may(rel, disk)
			if err != nil {
				return err
			}
			if !ok {
				p.held(rel)
				continue
			}
			changes = append(changes, change{r: Rendered{Path: rel}, remove: true, write: true})
		}
	}
	// Say what is about to be written before writing it: after a crash
	// in the middle, a file holding these bytes is ours.
	var intents []sqlstore.FileIntent
	for _, c := range changes {
		if c.write && !c.remove {
			intents = append(intents, sqlstore.FileIntent{Path: c.r.Path, SHA256: c.sum})
		}
	}
	if len(intents) > 0 {
		if err := p.record(func() error { return p.s.RecordFileIntents(ctx, intents) }); err != nil {
			return fmt.Errorf("record files to write: %w", err)
		}
	}
	fsys := p.FS
	if fsys == nil {
		fsys = markdown.OS
	}
	dirs := map[string]bool{}
	for _, c := range changes {
		if !c.write {
			continue
		}
		abs := filepath.Join(p.Root, filepath.FromSlash(c.r.Path))
		dirs[filepath.Dir(abs)] = true
		if c.remove {
			if err := fsys.Remove(abs); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove %s: %w", c.r.Path, err)
			}
			continue
		}
		if err := markdown.WriteFileAtomicFS(fsys, abs, c.r.Data, FileMode, false); err != nil {
			return err
		}
	}
	for _, d := range sortedKeys(dirs) {
		if err := fsys.SyncDir(d); err != nil {
			return fmt.Errorf("sync directory %s: %w", d, err)
		}
	}
	writes := make([]sqlstore.FileWrite, 0, len(changes))
	for _, c := range changes {
		if c.remove {
			writes = append(writes, sqlstore.FileWrite{Path: c.r.Path, Remove: true})
			continue
		}
		m := c.r.Meta
		pos := "{}"
		if len(m.Positions) > 0 {
			b, _ := json.Marshal(m.Positions) // map keys are sorted
			pos = string(b)
		}
		writes = append(writes, sqlstore.FileWrite{Path: c.r.Path, SHA256: c.sum, Bytes: int64(len(c.r.Data)),
			Stream: m.Stream, Seq: m.Seq, Positions: pos, Time: m.Time, KeepText: c.r.Text, Text: string(c.r.Data)})
	}
	return p.record(func() error { return p.s.RecordFiles(ctx, writes, done) })
}

// record runs one write of the files' record (a transaction of its
// own), after any fold holding the write lock.
func (p *Projector) record(write func() error) error {
	p.txMu.Lock()
	defer p.txMu.Unlock()
	if err := write(); err != nil {
		return fmt.Errorf("record files: %w", err)
	}
	return nil
}

func (p *Projector) held(rel string) {
	if p.Held != nil {
		p.Held(rel)
	}
}

// Files returns the rows of the files table in path order, with the text
// kept for the files sync reads back.
func (p *Projector) Files(ctx context.Context) ([]File, error) {
	return files(ctx, p.s.Reader())
}

func files(ctx context.Context, q sqlstore.Reader) ([]File, error) {
	rows, err := q.Files(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]File, 0, len(rows))
	for _, r := range rows {
		f := File{Path: r.Path, SHA256: r.SHA256, Bytes: r.Bytes, FileMeta: FileMeta{Stream: r.Stream, Seq: r.Seq, Time: r.Time}, Text: r.Text}
		_ = json.Unmarshal([]byte(r.Positions), &f.Positions)
		out = append(out, f)
	}
	return out, nil
}

// filesUnder lists the paths that start with prefix which dshmem wrote,
// whether or not their write was recorded (sqlstore.Reader.FilesUnder),
// so that a file no longer rendered is removed either way.
func filesUnder(ctx context.Context, q sqlstore.Reader, prefix string) ([]string, error) {
	return q.FilesUnder(ctx, prefix)
}

// missing returns the paths of old that no rendered file has.
func missing(old []string, rs []Rendered) []string {
	var out []string
	for _, o := range old {
		if !slices.ContainsFunc(rs, func(r Rendered) bool { return r.Path == o }) {
			out = append(out, o)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// renderGlobalFiles renders the stable layer (global.md, index.md,
// knowledge/) and lists the knowledge files it no longer has.
func renderGlobalFiles(ctx context.Context, db sqlstore.Reader) (rs []Rendered, gone []string, err error) {
	g, err := renderGlobalLayer(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	old, err := filesUnder(ctx, db, KnowledgeDir+"/")
	if err != nil {
		return nil, nil, err
	}
	return g, missing(old, g), nil
}

// renderScopeFiles renders a workspace's memory_summary.md and scope.json.
func renderScopeFiles(ctx context.Context, db sqlstore.Reader, scope string) ([]Rendered, error) {
	sum, err := renderSummary(ctx, db, scope)
	if err != nil {
		return nil, err
	}
	sj, err := renderScopeFile(ctx, db, scope)
	if err != nil {
		return nil, err
	}
	return []Rendered{sum, sj}, nil
}
