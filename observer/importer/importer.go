package importer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/markdown"
	"dshmem/observer"
	"dshmem/observer/dsh"
)

// Errors of the importers (ImportDSH, ImportLegacy).
var (
	// ErrNothingToImport is returned when a path holds no file the
	// importer recognises.
	ErrNothingToImport = errors.New("nothing to import")
	// ErrNothingRead is returned when there were source files but not
	// one of them could be read.
	ErrNothingRead = errors.New("no source file could be read")
)

// DefaultImportBatch is how many envelopes one intake call of an import
// carries when Options.Batch is 0: big enough that the fsync per
// batch is cheap per event, small enough to hold a few MiB.
const DefaultImportBatch = 1000

// maxRejectionsPerFile caps the rejection messages a FileImport keeps;
// Rejected still counts them all.
const maxRejectionsPerFile = 5

// Options configure ImportDSH and ImportLegacy. The zero value works.
type Options struct {
	// Batch caps the envelopes per intake call; 0 means DefaultImportBatch.
	Batch int
	// Progress, when set, is called before each file with its 1-based
	// number, the number of files and its path.
	Progress func(n, total int, path string)
	// Events, when set, is told after each intake call how many events
	// that call decided (appended, duplicate or rejected).
	Events func(n int)
}

func (o Options) batch() int {
	if o.Batch <= 0 {
		return DefaultImportBatch
	}
	return o.Batch
}

// FileImport is what importing one source file did.
type FileImport struct {
	Path    string   `json:"path"`
	Session string   `json:"session,omitempty"` // DSH logs: the header's session id
	Streams []string `json:"streams,omitempty"` // streams its events went to, sorted

	Events     int `json:"events"`     // envelopes made from the file
	Appended   int `json:"appended"`   // newly written to the log
	Duplicates int `json:"duplicates"` // already there: a re-import
	Rejected   int `json:"rejected"`   // refused by intake (Rejections says why)

	// Skipped counts what carries nothing to remember, by kind (host
	// event types; legacy blocks such as index links). Unknown counts
	// host types that are neither mapped nor ignorable; Malformed, mapped
	// rows of an unexpected shape. Neither stops an import.
	Skipped   map[string]int `json:"skipped,omitempty"`
	Unknown   map[string]int `json:"unknown,omitempty"`
	Malformed map[string]int `json:"malformed,omitempty"`

	// TornBytes are bytes at the end of a DSH log that do not form a
	// whole frame or line (a host still writing, or a torn write); they
	// were left out, everything before them was imported.
	TornBytes  int64  `json:"tornBytes,omitempty"`
	TailReason string `json:"tailReason,omitempty"`

	Notes      []string `json:"notes,omitempty"`
	Rejections []string `json:"rejections,omitempty"`
	// Error says why the file could not be read; nothing of it was imported.
	Error string `json:"error,omitempty"`
}

// Report is what an import did, file by file, with totals.
type Report struct {
	Kind    string       `json:"kind"`              // "dsh" or "legacy"
	Layouts []string     `json:"layouts,omitempty"` // legacy: the layouts found
	Notes   []string     `json:"notes,omitempty"`   // about the import as a whole
	Files   []FileImport `json:"files"`
	Total   ImportTotal  `json:"total"`
}

// ImportTotal sums the FileImports of a report.
type ImportTotal struct {
	Files      int            `json:"files"`
	Failed     int            `json:"failed"` // files that could not be read
	Events     int            `json:"events"`
	Appended   int            `json:"appended"`
	Duplicates int            `json:"duplicates"`
	Rejected   int            `json:"rejected"`
	Skipped    map[string]int `json:"skipped,omitempty"`
	Unknown    map[string]int `json:"unknown,omitempty"`
	Malformed  map[string]int `json:"malformed,omitempty"`
	TornBytes  int64          `json:"tornBytes,omitempty"`
}

func (r *Report) add(f FileImport) {
	r.Files = append(r.Files, f)
	t := &r.Total
	t.Files++
	if f.Error != "" {
		t.Failed++
	}
	t.Events += f.Events
	t.Appended += f.Appended
	t.Duplicates += f.Duplicates
	t.Rejected += f.Rejected
	t.TornBytes += f.TornBytes
	t.Skipped = addCounts(t.Skipped, f.Skipped)
	t.Unknown = addCounts(t.Unknown, f.Unknown)
	t.Malformed = addCounts(t.Malformed, f.Malformed)
}

func addCounts(dst, src map[string]int) map[string]int {
	for k, v := range src {
		if dst == nil {
			dst = map[string]int{}
		}
		dst[k] += v
	}
	return dst
}

// nonEmptyCounts returns m, or nil when it holds nothing, so that empty counts
// vanish from the JSON report.
func nonEmptyCounts(m map[string]int) map[string]int {
	if len(m) == 0 {
		return nil
	}
	return m
}

// ImportDSH imports DSH host session logs: path is one session file
// (.jsonl or .jsonl.zstd, whatever its name) or a tree that dsh.FindSessions
// walks (the highest generation per session directory). Each file is read
// whole, mapped by observer/dsh, and its envelopes go through intake in
// batches, so a re-import finds every id already there and appends
// nothing.
//
// Per file:
//
//   - a torn last frame or line is not an error: the whole frames are
//     imported and TornBytes says how much was left;
//   - unknown host types are counted, never fatal;
//   - a session whose cwd is not an absolute path (the host's test
//     snapshots carry the placeholder "{{cwd}}") cannot name a workspace:
//     its events lose the cwd and go to the global stream, the host's cwd
//     is kept on session/start as data.hostCwd, and a note says so;
//   - a session id already read from another file of this import is
//     noted: its events share ids with that file's, so they count as
//     duplicates;
//   - a file that cannot be read (not a session log, corrupt) is reported
//     in FileImport.Error and the others go on.
//
// The error is ErrNothingToImport when path holds no session log,
// ErrNothingRead when none could be read, or an intake failure (the log
// refused a write); the report holds what was done before it.
func ImportDSH(ctx context.Context, eng *observer.Engine, path string, opts Options) (Report, error) {
	return engine{eng}.importDSH(ctx, path, opts)
}

// engine is the observer engine as this package uses it.
type engine struct{ *observer.Engine }

func (e engine) importDSH(ctx context.Context, path string, opts Options) (Report, error) {
	rep := Report{Kind: "dsh"}
	paths, err := dshPaths(path)
	if err != nil {
		return rep, err
	}
	if len(paths) == 0 {
		return rep, fmt.Errorf("%w: no DSH session log under %s (looked for session.jsonl, session.jsonl.zstd and session.vN.jsonl[.zstd])", ErrNothingToImport, path)
	}
	seen := map[string]string{} // session id → first file
	for i, p := range paths {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if opts.Progress != nil {
			opts.Progress(i+1, len(paths), p)
		}
		f, err := e.importSession(ctx, p, seen, opts)
		rep.add(f)
		if err != nil {
			return rep, err
		}
	}
	if rep.Total.Failed == rep.Total.Files {
		return rep, fmt.Errorf("%w: %d session logs under %s, none readable", ErrNothingRead, len(paths), path)
	}
	return rep, nil
}

// dshPaths lists the session logs of path: path itself when it is a
// regular file, else what dsh.FindSessions finds.
func dshPaths(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("import DSH logs: %w", err)
	}
	if st.Mode().IsRegular() {
		return []string{path}, nil
	}
	return dsh.FindSessions(path)
}

func (e engine) importSession(ctx context.Context, path string, seen map[string]string, opts Options) (FileImport, error) {
	f := FileImport{Path: path}
	s, err := dsh.ReadFile(path)
	if err != nil {
		f.Error = err.Error()
		return f, nil
	}
	f.Session = s.ID
	f.Skipped = nonEmptyCounts(s.Stats.Skipped)
	f.Unknown = nonEmptyCounts(s.Stats.Unknown)
	f.Malformed = nonEmptyCounts(s.Stats.Malformed)
	f.TornBytes, f.TailReason = s.TornBytes, s.TailReason
	if first, ok := seen[s.ID]; ok {
		f.Notes = append(f.Notes, fmt.Sprintf("session id %q was already read from %s in this import; events with the same seq have the same id: the same event again is a duplicate, another one under that id is refused", s.ID, first))
	} else {
		seen[s.ID] = path
	}
	if s.Cwd != "" && !observer.IsAbsCwd(s.Cwd) {
		f.Notes = append(f.Notes, fmt.Sprintf("cwd %s is not an absolute path, so it names no workspace; the session was imported into the global stream", observer.QuoteClip(s.Cwd)))
		for i := range s.Events {
			ev := &s.Events[i]
			ev.Cwd = ""
			if ev.Type == events.TypeSessionStart {
				ev.Data = withHostCwd(ev.Data, s.Cwd)
			}
		}
	}
	lines, err := marshalFile(s.Events, &f)
	if err != nil {
		return f, err
	}
	_, err = e.ingestBatches(ctx, lines, &f, opts)
	return f, err
}

// marshalFile marshals the envelopes made from one source file as intake
// lines (marshalFit), sets f.Events and notes how many had their text cut.
func marshalFile(evs []events.Envelope, f *FileImport) ([][]byte, error) {
	lines := make([][]byte, 0, len(evs))
	cut := 0
	for i := range evs {
		line, shrunk, err := marshalFit(&evs[i])
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", f.Path, err)
		}
		if shrunk {
			cut++
		}
		lines = append(lines, line)
	}
	if cut > 0 {
		f.Notes = append(f.Notes, fmt.Sprintf("%d events had their text cut to fit the %d KiB event limit", cut, observer.MaxEventBytes>>10))
	}
	f.Events = len(lines)
	return lines, nil
}

// ingestBatches sends lines through intake opts.batch() at a time and
// adds the outcomes to f. It returns the outcomes in input order.
func (e engine) ingestBatches(ctx context.Context, lines [][]byte, f *FileImport, opts Options) ([]observer.Outcome, error) {
	all := make([]observer.Outcome, 0, len(lines))
	streams := map[string]bool{}
	for _, s := range f.Streams {
		streams[s] = true
	}
	for start := 0; start < len(lines); start += opts.batch() {
		end := min(start+opts.batch(), len(lines))
		res, outs, err := e.Ingest(ctx, lines[start:end])
		f.Appended += res.Appended
		f.Duplicates += res.Duplicates
		f.Rejected += res.Rejected
		if opts.Events != nil {
			opts.Events(res.Appended + res.Duplicates + res.Rejected)
		}
		for _, o := range outs {
			o.Line += start
			if o.Stream != "" {
				streams[o.Stream] = true
			}
			if o.Status == observer.StatusRejected && o.Error != nil && len(f.Rejections) < maxRejectionsPerFile {
				f.Rejections = append(f.Rejections, fmt.Sprintf("event %d (%s): %v", o.Line, o.ID, o.Error))
			}
			all = append(all, o)
		}
		if err != nil {
			return all, fmt.Errorf("import %s: %w", f.Path, err)
		}
	}
	f.Streams = f.Streams[:0]
	for s := range streams {
		f.Streams = append(f.Streams, s)
	}
	sort.Strings(f.Streams)
	if len(f.Streams) == 0 {
		f.Streams = nil
	}
	return all, nil
}

// withHostCwd returns the data of a session/start with hostCwd set to
// cwd, or data itself when it names a hostCwd already or does not
// decode (intake then refuses it and says why). The data is the
// mapper's, payload.Marshal of a payload.SessionStart, so encoding it
// again adds hostCwd at its place, the end, and changes nothing else.
func withHostCwd(data json.RawMessage, cwd string) json.RawMessage {
	var s payload.SessionStart
	if payload.Unmarshal(data, &s) != nil || s.HostCwd != "" {
		return data
	}
	s.HostCwd = cwd
	raw, err := payload.Marshal(s)
	if err != nil {
		return data
	}
	return raw
}

// cutMarker ends a text that an import cut to fit MaxEventBytes.
const cutMarker = "\n[dshmem import: %d bytes cut to fit the event size limit]"

// marshalFit marshals ev as an intake line. A line over MaxEventBytes
// (a huge tool result, say) would be refused whole; instead its text
// (cutText) is cut at a rune boundary and marked, so the event, its id
// and the rest of its text are kept. shrunk reports a cut.
//
// The cut decodes the data through events/payload and encodes it again
// with payload.Marshal. The data an import makes is payload.Marshal's
// already (observer/dsh's mapper, the legacy mapping), so only the text
// changes; data of another shape would be written in payload's.
func marshalFit(ev *events.Envelope) (line []byte, shrunk bool, err error) {
	line, err = events.Marshal(ev)
	if err != nil {
		return nil, false, fmt.Errorf("marshal event %s: %w", ev.ID, err)
	}
	if len(line) <= observer.MaxEventBytes {
		return line, false, nil
	}
	p, ok := payload.New(ev.Type)
	if !ok || payload.Unmarshal(ev.Data, p) != nil {
		return line, false, nil // intake refuses it and says why
	}
	field := cutText(p)
	if field == nil || *field == "" {
		return line, false, nil
	}
	orig := *field
	text := orig
	for over := len(line) - observer.MaxEventBytes; over > 0 && len(text) > 0; over = len(line) - observer.MaxEventBytes {
		// Escaping can make the encoded text longer than the text, so
		// cut at least what is over, plus room for the marker, and loop.
		text = markdown.CutUTF8(text, max(len(text)-over-len(cutMarker)-32, 0))
		*field = text + fmt.Sprintf(cutMarker, len(orig)-len(text))
		data, err := payload.Marshal(p)
		if err != nil {
			return nil, false, fmt.Errorf("marshal event %s: %w", ev.ID, err)
		}
		cp := *ev
		cp.Data = data
		if line, err = events.Marshal(&cp); err != nil {
			return nil, false, fmt.Errorf("marshal event %s: %w", ev.ID, err)
		}
	}
	return line, true, nil
}

// cutText returns the field of p that marshalFit cuts: the text of a
// message, tool result or compaction summary, the content of a remember
// or a file edit; nil for a payload without one.
func cutText(p payload.Payload) *string {
	switch p := p.(type) {
	case *payload.UserMessage:
		return &p.Text
	case *payload.AssistantMessage:
		return &p.Text
	case *payload.ToolResult:
		return &p.Text
	case *payload.CompactionSummary:
		return &p.Text
	case *payload.Remember:
		return &p.Content
	case *payload.FileEdit:
		return &p.Content
	}
	return nil
}
