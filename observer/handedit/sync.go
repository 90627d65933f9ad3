package handedit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/markdown"
	"dshmem/observer"
	"dshmem/projector"
)

// Sync actions: what Sync did with one file.
const (
	Captured = "captured"   // an edit of global.md or knowledge/: file/edit + memory/ops logged, file rendered again
	Damaged  = "damaged"    // more than half its blocks gone, or unreadable: kept as <name>.damaged, rendered again
	NotRead  = "not-read"   // index.md or a memory_summary.md edited: file/edit logged, rendered again
	Record   = "record"     // a sessions/ file changed: left as it is; restore undoes it
	Missing  = "missing"    // deleted: rendered again
	Format   = "formatting" // only whitespace or block order changed: rendered again
	Foreign  = "foreign"    // a knowledge/*.md dshmem never wrote: not read
)

// DamagedSuffix is added to the name of a damaged file's saved copy.
const DamagedSuffix = ".damaged"

// File is what Sync did with one file.
type File struct {
	Path   string `json:"path"`
	Action string `json:"action"`
	Ops    int    `json:"ops,omitempty"`    // memory ops logged for it
	Saved  string `json:"saved,omitempty"`  // where damaged bytes were kept, relative to the root
	Detail string `json:"detail,omitempty"` // why, for people
}

// Report lists the files Sync found changed, in path order.
type Report struct {
	Files []File `json:"files"`
}

// Sync reads back the projection files whose bytes differ from what
// dshmem last wrote (the files table's sha256) and does, per file:
//
//	global.md, knowledge/*.md   a file/edit event {path, content} and a memory/ops event whose
//	                            ops (provenance "hand-edit") revise each edited anchored block,
//	                            add each new block and forget each removed one; then the file
//	                            is rendered again from the index, which now holds the edit
//	index.md, memory_summary.md a file/edit event only (they are views, not sources: their
//	                            text is kept in the log), then rendered again
//	sessions/YYYY-MM-DD.md      nothing: a record changed by hand is reported and left as is
//	                            until `dshmem restore` puts the log's version back
//	any of them, damaged        more than half of its blocks gone, or a block that cannot be
//	                            read (markdown.Compare's Damaged): the bytes are kept as
//	                            <name>.damaged, nothing is logged, the file is rendered again
//	any of them, deleted        rendered again
//
// A knowledge/*.md that dshmem never wrote is reported and not read.
// Event ids derive from the path and the hashes of the written and the
// edited bytes, so a sync interrupted after logging and run again logs
// nothing twice. A file is rewritten only while its bytes are still the
// ones read: an edit made during the sync is kept for the next one.
func Sync(ctx context.Context, eng *observer.Engine) (Report, error) {
	return engine{eng}.sync(ctx)
}

// engine is the observer engine as this package uses it.
type engine struct{ *observer.Engine }

func (e engine) sync(ctx context.Context) (Report, error) {
	if e.ReadOnly() {
		return Report{}, observer.ErrReadOnly
	}
	var rep Report
	// Compare the files as the index now says they read, not as the
	// file writer last left them.
	err := e.Settled(func() error { return e.WriteFiles(ctx) })
	if err != nil {
		return rep, fmt.Errorf("sync: %w", err)
	}
	rows, err := e.Projector().Files(ctx)
	if err != nil {
		return rep, err
	}
	entryIDs, err := e.scopeEntryIDs(ctx, "global")
	if err != nil {
		return rep, err
	}
	type capture struct {
		file   int // index in rep.Files
		stream string
		rel    string
		disk   []byte
		mtime  time.Time
		base   string // sha256 of what dshmem wrote
		ops    []payload.Op
		log    bool // log a file/edit event
	}
	var caps []*capture
	rewrite := map[string]string{} // path → sha256 of the bytes that may be replaced
	recorded := map[string]bool{}
	for _, row := range rows {
		recorded[row.Path] = true
		info, ok := projector.ParsePath(row.Path)
		if !ok || info.Kind == projector.KindHistory || info.Kind == projector.KindScope {
			continue // summary history and scope.json are not edited; verify reports them
		}
		abs := filepath.Join(e.Root(), filepath.FromSlash(row.Path))
		disk, err := os.ReadFile(abs)
		if errors.Is(err, fs.ErrNotExist) {
			rep.Files = append(rep.Files, File{Path: row.Path, Action: Missing, Detail: "deleted; rendered again from the log"})
			rewrite[row.Path] = ""
			continue
		}
		if err != nil {
			return rep, fmt.Errorf("sync: %w", err)
		}
		sum := projector.SHA256(disk)
		if sum == row.SHA256 {
			continue
		}
		st, _ := os.Stat(abs)
		c := &capture{stream: info.Scope, rel: row.Path, disk: disk, base: row.SHA256, mtime: time.Now()}
		if st != nil {
			c.mtime = st.ModTime()
		}
		f := File{Path: row.Path}
		switch info.Kind {
		case projector.KindGlobal, projector.KindKnowledge:
			d, damaged, err := e.compareWritten(&f, abs, []byte(row.Text), disk)
			if err != nil {
				return rep, err
			}
			if damaged {
				rewrite[row.Path] = sum
				break
			}
			if d.Empty() {
				f.Action, f.Detail = Format, "only whitespace or the order of blocks changed; rendered again"
				rewrite[row.Path] = sum
				break
			}
			c.ops = opsFromDiff(d, info.Kind, topicOf(row.Text), entryIDs)
			c.log = true
			f.Action = Captured
			if len(d.Stray) > 0 {
				f.Detail = fmt.Sprintf("%d line(s) outside any block cannot be placed in an entry; they are kept in the file/edit event", len(d.Stray))
			}
		case projector.KindIndex, projector.KindSummary:
			c.log = true
			f.Action, f.Detail = NotRead, "a view, not a source: the text is kept in a file/edit event and the file rendered again; edit the entries in global.md or knowledge/"
		case projector.KindDay:
			r, ok, err := e.Projector().Render(ctx, row.Path)
			if err != nil {
				return rep, err
			}
			if ok {
				_, damaged, err := e.compareWritten(&f, abs, r.Data, disk)
				if err != nil {
					return rep, err
				}
				if damaged {
					rewrite[row.Path] = sum
					break
				}
			}
			f.Action, f.Detail = Record, "a record changed by hand; left as it is (run 'dshmem restore "+row.Path+" --out "+row.Path+"' to put the log's version back)"
		}
		rep.Files = append(rep.Files, f)
		if c.log {
			c.file = len(rep.Files) - 1
			caps = append(caps, c)
			rewrite[row.Path] = sum
		}
	}
	// A block moved from one file to another is removed from one and
	// foreign in the other: it is revised, not forgotten.
	moved := map[string]bool{}
	for _, c := range caps {
		for _, o := range c.ops {
			if o.Op == payload.OpRevise {
				moved[o.TargetID] = true
			}
		}
	}
	var lines [][]byte
	for _, c := range caps {
		var ops []payload.Op
		for _, o := range c.ops {
			if o.Op == payload.OpForget && moved[o.TargetID] {
				continue
			}
			ops = append(ops, o)
		}
		edited := projector.SHA256(c.disk)
		id := "sync:" + c.rel + ":" + c.base[:12] + ":" + edited[:12]
		at := c.mtime.UTC().Format(time.RFC3339Nano)
		line, err := syncLine(id, events.Envelope{Type: events.TypeFileEdit, Time: at, Stream: c.stream},
			payload.FileEdit{Path: c.rel, Content: string(c.disk)})
		if err != nil {
			return rep, err
		}
		lines = append(lines, line)
		if len(ops) > 0 {
			// A hand edit has no distiller; its ops are named for where
			// they came from, as each op's provenance is.
			line, err := syncLine(id+":ops", events.Envelope{Type: events.TypeMemoryOps, Time: at, Stream: c.stream},
				payload.Ops{Checkpoint: "sync-" + edited[:16], Distiller: payload.ProvenanceHandEdit, Ops: ops})
			if err != nil {
				return rep, err
			}
			lines = append(lines, line)
		}
		rep.Files[c.file].Ops = len(ops)
	}
	if len(lines) > 0 {
		_, outs, err := e.Ingest(ctx, lines)
		if err != nil {
			return rep, fmt.Errorf("sync: log the edits: %w", err)
		}
		for _, o := range outs {
			if o.Status == observer.StatusRejected {
				return rep, fmt.Errorf("sync: an edit was refused, so no file was rewritten: %v", o.Error)
			}
		}
	}
	// Knowledge files nobody asked dshmem to write.
	if ents, err := os.ReadDir(filepath.Join(e.Root(), projector.KnowledgeDir)); err == nil {
		for _, d := range ents {
			rel := projector.KnowledgeDir + "/" + d.Name()
			if strings.HasSuffix(d.Name(), ".md") && !recorded[rel] {
				rep.Files = append(rep.Files, File{Path: rel, Action: Foreign, Detail: "not written by dshmem, so not read; move its blocks into global.md or a knowledge file dshmem wrote"})
			}
		}
	}
	err = e.Settled(func() error { return e.Projector().Rewrite(ctx, rewrite) })
	if err != nil {
		return rep, fmt.Errorf("sync: render the files again: %w", err)
	}
	slices.SortStableFunc(rep.Files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return rep, nil
}

// syncLine encodes an event of a sync as an intake line: env with id and
// data as payload.Marshal writes it.
func syncLine(id string, env events.Envelope, data payload.Payload) ([]byte, error) {
	raw, err := payload.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("sync: %w", err)
	}
	env.ID, env.Data = id, raw
	line, err := events.Marshal(&env)
	if err != nil {
		return nil, fmt.Errorf("sync: encode %s: %w", id, err)
	}
	return line, nil
}

// compareWritten compares the bytes on disk with the bytes dshmem wrote
// (markdown.Compare). A damaged file's bytes are saved next to it as
// <name>.damaged and f says so; the caller then has it rendered again.
func (e engine) compareWritten(f *File, abs string, written, disk []byte) (d markdown.Diff, damaged bool, err error) {
	d, err = markdown.Compare(written, disk)
	if err != nil {
		return d, false, fmt.Errorf("sync %s: %w", f.Path, err)
	}
	if !d.Damaged {
		return d, false, nil
	}
	if err := markdown.WriteFileAtomic(abs+DamagedSuffix, disk, projector.FileMode); err != nil {
		return d, false, fmt.Errorf("sync: keep damaged %s: %w", f.Path, err)
	}
	f.Action, f.Saved = Damaged, f.Path+DamagedSuffix
	f.Detail = d.Reason + "; the damaged bytes are kept as " + f.Saved + " and the file is rendered again from the log"
	return d, true, nil
}

// scopeEntryIDs lists the ids of the entries of a stream that ops can
// still reach (not forgotten).
func (e engine) scopeEntryIDs(ctx context.Context, scope string) (map[string]bool, error) {
	ids, err := e.Store().ReachableEntryIDs(ctx, scope)
	if err != nil {
		return nil, fmt.Errorf("sync: %w", err)
	}
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m, nil
}

// topicOf reads the topic name from the title line of a rendered
// knowledge file ("# Go tooling").
func topicOf(text string) string {
	line, _, _ := strings.Cut(text, "\n")
	return strings.TrimSpace(strings.TrimPrefix(line, "# "))
}

// opsFromDiff turns what a hand edit did to global.md or a knowledge file
// into ops. A new block keeps the file it was written in: one in global.md
// without a type is a rule; one in a knowledge file without tags is
// tagged with the file's topic (unless the topic is its type).
func opsFromDiff(d markdown.Diff, kind projector.Kind, topic string, known map[string]bool) []payload.Op {
	var ops []payload.Op
	// Description, tags, terms and importance are always written (tags
	// and terms as [] when there are none), so that clearing one by hand
	// is an edit too: a revise keeps what it is not given.
	full := func(op string, e markdown.Entry) payload.Op {
		desc, imp := e.Description, e.Importance
		o := payload.Op{Op: op, Type: e.Type, Title: e.Title, Description: &desc, Content: e.Content,
			Tags: e.Tags, Terms: e.Terms, Importance: &imp, Provenance: payload.ProvenanceHandEdit}
		if o.Tags == nil {
			o.Tags = []string{}
		}
		if o.Terms == nil {
			o.Terms = []string{}
		}
		return o
	}
	add := func(e markdown.Entry) {
		if e.Type == "" && kind == projector.KindGlobal {
			// What people write in global.md are rules for the agent.
			e.Type = payload.TypeRule
		}
		if kind == projector.KindKnowledge && len(e.Tags) == 0 && topic != "" && topic != e.Type {
			e.Tags = []string{topic}
		}
		o := full(payload.OpAdd, e)
		o.Reason = "written by hand"
		ops = append(ops, o)
	}
	for _, e := range d.Revised {
		o := full(payload.OpRevise, e)
		o.TargetID, o.Reason = e.ID, "edited by hand"
		ops = append(ops, o)
	}
	for _, e := range d.Foreign {
		if known[e.ID] {
			o := full(payload.OpRevise, e)
			o.TargetID, o.Reason = e.ID, "moved by hand"
			ops = append(ops, o)
			continue
		}
		e.ID = ""
		add(e)
	}
	for _, e := range d.Added {
		add(e)
	}
	for _, id := range d.Removed {
		ops = append(ops, payload.Op{Op: payload.OpForget, TargetID: id, Reason: "removed by hand", Provenance: payload.ProvenanceHandEdit})
	}
	return ops
}
