package importer

// Legacy import: the trees of the memory plugins dshmem replaces, and how
// they become events. No real legacy tree was available; the shapes below
// are the ones ReadLegacy accepts (fixtures: testdata/legacy/).
//
// # dsh-memory (Markdown)
//
//	global.md  index.md                    facts, global stream
//	knowledge/<topic>.md (any depth)       facts, tag "<topic>"
//	projects/<name>.md, projects/<name>/…  facts, tag "project:<name>" (global
//	                                       stream: the tree names no cwd)
//	tools/<name>.md                        facts, tag "tool:<name>"
//	sessions/…/YYYY-MM-DD.md               session days
//
// A fact is a top-level list item (-, *, + or 1. / 1), a leading [ ] or
// [x] dropped) with its continuation lines, nested items and any fenced
// code after it, or a paragraph. YAML front matter, one-line HTML
// comments, headings and thematic breaks are not facts. Each fact becomes
//
//	memory/remember {content: the block, type, tags: [topic, nearest heading],
//	                 title (only for "**Title**: …" items), legacy: {source, heading}}
//
// with type from the nearest heading that names one (then its parents):
// procedure (how to, steps, workflow, runbook, 步骤, 流程), fix (fix, bug,
// pitfall, gotcha, troubleshooting, 修复, 坑), rule (rule, convention,
// guideline, 规则, 约定, 规范), decision (decision, decided, 决定, 决策),
// architecture (architecture, design, 架构, 设计), preference (prefer…,
// 偏好, 习惯); else fact. In index.md, an item that starts with a link to a
// .md file describes that file and is skipped (counted "index link").
// Time: the first YYYY-MM-DD in the fact, else the first in the file's name
// or text, else 1970-01-01T00:00:00Z — never the clock.
//
// A session day is cut into sections at its headings of the shallowest
// level under the title (a level-1 heading on the first line, dropped);
// text before the first of them is a section too, and a file without such
// headings is one section. Section n (from 0) becomes
//
//	compaction/summary {compactionId: "legacy:<path>:<n>", text: the section}
//
// on the global stream at the day's 00:00:00Z + n seconds.
//
// # dsh-workspace-memory (JSON)
//
//	global/memory_entries.json                    global stream
//	scopes/ws-<20 hex>/memory_entries.json        stream ws-<20 hex> (the same key)
//	memory_summary.md, scope.json, summary_history/  derived: not read
//
// memory_entries.json is a JSON array of entries or {"entries": [...]}
// (other keys ignored). An entry is an object with, all optional: id
// (string or number), scope (ignored: the directory decides), type,
// title, description, retrievalTerms (array or string → terms), content
// (else description, else title; an entry with none is skipped), tags
// (array or comma-separated string), importance (number, numeric string,
// or low/normal/medium/high/critical → 0/1/1/2/3; written as the fold
// reads it, clamped to 0–3 and truncated: 2.5 is 2), status, conflictGroupId, supersedes and supersededBy (id or ids),
// revisions, provenance, createdAt and updatedAt (RFC 3339, YYYY-MM-DD, or
// Unix time as number or string: milliseconds from 1e11 up, else seconds).
// Each becomes memory/remember with our fields, a type not of ours mapped to
// fact, and everything else under data.legacy (status, ids, the raw
// revisions and provenance, the original times). Time: updatedAt, else
// createdAt, else 1970-01-01T00:00:00Z.
//
//   - status superseded, forgotten, deleted, archived, inactive, expired or
//     retracted: remembered, then forgotten by memory/forget {entryId,
//     reason: "legacy status …"} with id "<remember id>:forget", so the
//     history is kept and the entry is not active;
//   - a conflictGroupId: imported as active with tag "conflict:<group>"
//     (the conflict op of memory/ops is not used);
//   - any other status: active.
//
// # Ids
//
// Every event id is "legacy:" + 16 hex digits of sha256("<path>\n<key>"),
// path relative to the tree root, key the entry id (else its content), the
// fact's text, or "<compactionId>\n<text>" for a section. Importing the
// same tree again, from wherever it lies, makes the same events and
// appends nothing. A changed fact is a new fact: the old one stays.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/projector"
)

// The two legacy layouts ImportLegacy reads (see "Legacy import" above).
const (
	LegacyDSHMemory       = "dsh-memory"
	LegacyWorkspaceMemory = "dsh-workspace-memory"
)

// legacyEpoch is the time of a legacy fact whose file names no date, in
// the envelopeTime form: a fixed time, never the clock, so that a
// re-import makes identical events.
const legacyEpoch = "1970-01-01T00:00:00.000Z"

// envelopeTime is the form of the times an import writes (the same as
// observer/dsh writes). Part of the event content; do not change, or a
// re-import of an old tree makes events that differ from the first import.
const envelopeTime = "2006-01-02T15:04:05.000Z"

// LegacyFile is one file of a legacy tree, read and mapped to events.
type LegacyFile struct {
	Path   string // relative to the tree root, with '/'
	Layout string // LegacyDSHMemory or LegacyWorkspaceMemory
	// Events are memory/remember and compaction/summary envelopes, in
	// file order.
	Events []events.Envelope
	// Forgets are the legacy entries that were superseded or forgotten:
	// each is remembered (in Events) and then forgotten, which needs the
	// seq the remember got, so the forget is made at import time.
	Forgets []LegacyForget
	Skipped map[string]int
	Notes   []string
	Err     error // the file could not be read; Events is empty
}

// LegacyForget says that the entry made by the memory/remember event
// RememberID is to be forgotten by an event with ID.
type LegacyForget struct {
	ID         string
	RememberID string
	Stream     string
	Time       string
	Reason     string
}

// LegacyTree is what ReadLegacy found under a root.
type LegacyTree struct {
	Root    string
	Layouts []string     // the layouts recognised, in the order read
	Files   []LegacyFile // in the order read
	Notes   []string     // files under the root that belong to no layout
}

// ReadLegacy reads a dsh-memory Markdown tree, a dsh-workspace-memory
// tree, or a directory holding both, and maps every fact, entry and
// session summary to an event. It reads only; nothing here depends on the
// clock, so reading the same bytes again gives the same events.
func ReadLegacy(root string) (LegacyTree, error) {
	t := LegacyTree{Root: root}
	st, err := os.Stat(root)
	if err != nil {
		return t, fmt.Errorf("read legacy tree: %w", err)
	}
	if !st.IsDir() {
		return t, fmt.Errorf("read legacy tree %s: not a directory; pass the root of a dsh-memory tree (global.md, knowledge/, sessions/) or of a dsh-workspace-memory tree (global/, scopes/ws-*/)", root)
	}
	var files []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return t, fmt.Errorf("read legacy tree %s: %w", root, err)
	}
	sort.Strings(files)
	var md, ws bool
	var ignored []string
	for _, rel := range files {
		switch legacyRole(rel) {
		case roleFacts:
			md = true
			t.Files = append(t.Files, readLegacyFile(root, rel, LegacyDSHMemory, markdownFacts))
		case roleSessions:
			md = true
			t.Files = append(t.Files, readLegacyFile(root, rel, LegacyDSHMemory, sessionDay))
		case roleEntries:
			ws = true
			t.Files = append(t.Files, readLegacyFile(root, rel, LegacyWorkspaceMemory, entriesFile))
		case roleDerived:
			ws = true
		default:
			ignored = append(ignored, rel)
		}
	}
	if md {
		t.Layouts = append(t.Layouts, LegacyDSHMemory)
	}
	if ws {
		t.Layouts = append(t.Layouts, LegacyWorkspaceMemory)
	}
	if len(ignored) > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("not read, part of neither layout (%d): %s", len(ignored), clipList(ignored, 5)))
	}
	return t, nil
}

// readLegacyFile reads root/rel and maps its bytes with fn.
func readLegacyFile(root, rel, layout string, fn func(rel string, b []byte) LegacyFile) LegacyFile {
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return LegacyFile{Path: rel, Layout: layout, Err: fmt.Errorf("read %s: %w", rel, err)}
	}
	return fn(rel, b)
}

func clipList(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:n], ", ") + fmt.Sprintf(", … (%d more)", len(xs)-n)
}

type legacyFileRole int

const (
	roleNone     legacyFileRole = iota
	roleFacts                   // dsh-memory: global.md, index.md, knowledge/, projects/, tools/
	roleSessions                // dsh-memory: sessions/*.md
	roleEntries                 // dsh-workspace-memory: global/ or scopes/*/ memory_entries.json
	roleDerived                 // dsh-workspace-memory files rebuilt from the entries
)

func legacyRole(rel string) legacyFileRole {
	parts := strings.Split(rel, "/")
	md := strings.HasSuffix(rel, ".md")
	derived := func(name string) bool {
		return name == "memory_summary.md" || name == "scope.json" || name == "summary_history"
	}
	switch {
	case rel == "global.md" || rel == "index.md":
		return roleFacts
	case md && len(parts) >= 2 && (parts[0] == "knowledge" || parts[0] == "projects" || parts[0] == "tools"):
		return roleFacts
	case md && len(parts) >= 2 && parts[0] == "sessions":
		return roleSessions
	case rel == "global/memory_entries.json",
		len(parts) == 3 && parts[0] == "scopes" && parts[2] == "memory_entries.json":
		return roleEntries
	case len(parts) >= 2 && parts[0] == "global" && derived(parts[1]),
		len(parts) >= 3 && parts[0] == "scopes" && derived(parts[2]):
		return roleDerived
	}
	return roleNone
}

// legacyID is the id of the event made from key (an entry id or a block's
// text) of the file rel: "legacy:" and 16 hex digits of
// sha256(rel "\n" key). Part of the import's idempotency; do not change.
func legacyID(rel, key string) string {
	sum := sha256.Sum256([]byte(rel + "\n" + key))
	return "legacy:" + hex.EncodeToString(sum[:8])
}

// legacyEnvelope makes the envelope of an imported event. data holds
// only strings, string slices, small integers and JSON already compacted
// (rawOrNil), so encoding it cannot fail; a failure is a bug here.
func legacyEnvelope(id, stream, t string, data payload.Payload) events.Envelope {
	raw, err := payload.Marshal(data)
	if err != nil {
		panic(fmt.Sprintf("observer: legacy event %s: %v", id, err))
	}
	return events.Envelope{
		V: events.CurrentVersion, Stream: stream, ID: id, Type: data.EventType(), Time: t, Data: raw,
	}
}

// ImportLegacy imports a legacy tree (ReadLegacy): every fact and entry
// becomes a memory/remember event and every session day section a
// compaction/summary, with ids derived from the file and the entry, so a
// re-import appends nothing. Entries whose legacy status was superseded
// or forgotten are remembered and then forgotten (a memory/forget with
// id "<remember id>:forget"), so their history is kept and they are not
// active.
//
// The error is ErrNothingToImport when root holds neither layout,
// ErrNothingRead when no file of it could be read, or an intake failure.
func ImportLegacy(ctx context.Context, eng *observer.Engine, root string, opts Options) (Report, error) {
	return engine{eng}.importLegacy(ctx, root, opts)
}

func (e engine) importLegacy(ctx context.Context, root string, opts Options) (Report, error) {
	rep := Report{Kind: "legacy"}
	tree, err := ReadLegacy(root)
	if err != nil {
		return rep, err
	}
	rep.Layouts, rep.Notes = tree.Layouts, tree.Notes
	if len(tree.Files) == 0 {
		return rep, fmt.Errorf("%w: %s is neither a dsh-memory tree (global.md, index.md, knowledge/, sessions/, projects/, tools/) nor a dsh-workspace-memory tree (global/memory_entries.json, scopes/ws-*/memory_entries.json)", ErrNothingToImport, root)
	}
	for i := range tree.Files {
		lf := &tree.Files[i]
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if opts.Progress != nil {
			opts.Progress(i+1, len(tree.Files), lf.Path)
		}
		f, err := e.importLegacyFile(ctx, lf, opts)
		rep.add(f)
		if err != nil {
			return rep, err
		}
	}
	if rep.Total.Failed == rep.Total.Files {
		return rep, fmt.Errorf("%w: %d legacy files under %s, none readable", ErrNothingRead, rep.Total.Files, root)
	}
	return rep, nil
}

func (e engine) importLegacyFile(ctx context.Context, lf *LegacyFile, opts Options) (FileImport, error) {
	f := FileImport{Path: lf.Path, Skipped: lf.Skipped, Notes: lf.Notes}
	if lf.Err != nil {
		f.Error = lf.Err.Error()
		return f, nil
	}
	lines, err := marshalFile(lf.Events, &f)
	if err != nil {
		return f, err
	}
	outs, err := e.ingestBatches(ctx, lines, &f, opts)
	if err != nil || len(lf.Forgets) == 0 {
		return f, err
	}
	// The entry a remember made is named by the seq it got
	// (projector.EntryID), which a re-import learns from the index.
	seqs := map[string]uint64{}
	for _, o := range outs {
		if o.Status == observer.StatusAppended {
			seqs[o.ID] = o.Seq
		}
	}
	var forgets [][]byte
	for _, fg := range lf.Forgets {
		seq, ok := seqs[fg.RememberID]
		if !ok {
			if seq, ok, err = e.Store().EventSeq(ctx, fg.Stream, fg.RememberID); err != nil {
				return f, fmt.Errorf("import %s: %w", lf.Path, err)
			}
		}
		if !ok {
			continue // the remember was rejected; there is nothing to forget
		}
		ev := legacyEnvelope(fg.ID, fg.Stream, fg.Time, payload.Forget{EntryID: projector.EntryID(fg.Stream, seq, 0), Reason: fg.Reason})
		line, err := events.Marshal(&ev)
		if err != nil {
			return f, fmt.Errorf("import %s: marshal event %s: %w", lf.Path, ev.ID, err)
		}
		forgets = append(forgets, line)
	}
	f.Events += len(forgets)
	_, err = e.ingestBatches(ctx, forgets, &f, opts)
	return f, err
}
