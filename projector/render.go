package projector

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/markdown"
	"dshmem/sqlstore"
)

// Paths of the projections, relative to the memory root, '/'-separated
// (ARCHITECTURE §2). Part of the on-disk layout; do not change.
const (
	GlobalFile   = "global.md"
	IndexFile    = "index.md"
	KnowledgeDir = "knowledge"
	ScopesDir    = "scopes"
	ArchivedDir  = "archived" // the recycle bin: archived/ws-<id>/ holds what scopes/ws-<id>/ held
	SessionsDir  = "sessions"
	ArchiveDir   = "archive" // sessions/archive/: day files rotated out (maintenance/rotate)
	SummaryFile  = "memory_summary.md"
	ScopeFile    = "scope.json"
	HistoryDir   = "summary_history"

	// HistoryKeep is how many summary versions summary_history/ keeps.
	HistoryKeep = 10

	globalStream = "global"
)

// globalTypes are the entry types of the global stream that go to
// global.md; every other type goes to a knowledge file.
var globalTypes = map[string]bool{payload.TypePreference: true, payload.TypeRule: true, payload.TypeDecision: true}

// Kind says which projection a path is.
type Kind int

// Kinds of projection files.
const (
	KindNone      Kind = iota
	KindGlobal         // global.md
	KindIndex          // index.md
	KindKnowledge      // knowledge/<file>.md
	KindSummary        // scopes/ws-<id>/memory_summary.md
	KindScope          // scopes/ws-<id>/scope.json
	KindHistory        // scopes/ws-<id>/summary_history/<seq>.md
	KindDay            // sessions/YYYY-MM-DD.md
)

// PathInfo is what a projection path names.
type PathInfo struct {
	Kind  Kind
	Scope string // the stream whose events feed the file; "" for a day file
	Day   string // YYYY-MM-DD for KindDay
	// Archived: a scope's file under archived/ rather than scopes/ (the
	// recycle bin: KindSummary, KindScope, KindHistory), or a day file
	// under sessions/archive/, where rotation moves the days before its
	// cut-off (KindDay, DayFile).
	Archived bool
	Seq      uint64 // for KindHistory
}

var (
	dayRE     = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
	historyRE = regexp.MustCompile(`^[0-9]{20}\.md$`)
	topicRE   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*\.md$`)
)

// ParsePath classifies a '/'-separated path relative to the root. It
// returns false for anything that is not a projection dshmem writes.
func ParsePath(rel string) (PathInfo, bool) {
	parts := strings.Split(rel, "/")
	if len(parts) >= 3 && parts[0] == ArchivedDir {
		parts[0] = ScopesDir
		info, ok := ParsePath(strings.Join(parts, "/"))
		info.Archived = ok
		return info, ok
	}
	switch {
	case len(parts) == 1 && rel == GlobalFile:
		return PathInfo{Kind: KindGlobal, Scope: globalStream}, true
	case len(parts) == 1 && rel == IndexFile:
		return PathInfo{Kind: KindIndex, Scope: globalStream}, true
	case len(parts) == 2 && parts[0] == KnowledgeDir && topicRE.MatchString(parts[1]):
		return PathInfo{Kind: KindKnowledge, Scope: globalStream}, true
	case len(parts) == 2 && parts[0] == SessionsDir && strings.HasSuffix(parts[1], ".md") && dayRE.MatchString(strings.TrimSuffix(parts[1], ".md")):
		return PathInfo{Kind: KindDay, Day: strings.TrimSuffix(parts[1], ".md")}, true
	case len(parts) == 3 && parts[0] == SessionsDir && parts[1] == ArchiveDir && strings.HasSuffix(parts[2], ".md") && dayRE.MatchString(strings.TrimSuffix(parts[2], ".md")):
		return PathInfo{Kind: KindDay, Day: strings.TrimSuffix(parts[2], ".md"), Archived: true}, true
	case len(parts) == 3 && parts[0] == ScopesDir && IsWorkspace(parts[1]) && parts[2] == SummaryFile:
		return PathInfo{Kind: KindSummary, Scope: parts[1]}, true
	case len(parts) == 3 && parts[0] == ScopesDir && IsWorkspace(parts[1]) && parts[2] == ScopeFile:
		return PathInfo{Kind: KindScope, Scope: parts[1]}, true
	case len(parts) == 4 && parts[0] == ScopesDir && IsWorkspace(parts[1]) && parts[2] == HistoryDir && historyRE.MatchString(parts[3]):
		seq, err := strconv.ParseUint(strings.TrimSuffix(parts[3], ".md"), 10, 64)
		if err != nil || seq == 0 {
			return PathInfo{}, false
		}
		return PathInfo{Kind: KindHistory, Scope: parts[1], Seq: seq}, true
	}
	return PathInfo{}, false
}

// SummaryPath is scopes/<scope>/memory_summary.md.
func SummaryPath(scope string) string { return path.Join(ScopesDir, scope, SummaryFile) }

// ScopePath is scopes/<scope>/scope.json.
func ScopePath(scope string) string { return path.Join(ScopesDir, scope, ScopeFile) }

// HistoryPath is scopes/<scope>/summary_history/<seq, 20 digits>.md.
func HistoryPath(scope string, seq uint64) string {
	return path.Join(ScopesDir, scope, HistoryDir, fmt.Sprintf("%020d.md", seq))
}

// DayPath is sessions/<day>.md.
func DayPath(day string) string { return path.Join(SessionsDir, day+".md") }

// ArchivedDayPath is sessions/archive/<day>.md.
func ArchivedDayPath(day string) string { return path.Join(SessionsDir, ArchiveDir, day+".md") }

// DayFile is where the day file of day lives under the rotation
// cut-off rotated (YYYY-MM-DD, "" for none): sessions/archive/<day>.md
// for a day before it, else sessions/<day>.md.
func DayFile(day, rotated string) string {
	if rotated != "" && day < rotated {
		return ArchivedDayPath(day)
	}
	return DayPath(day)
}

// ValidDay reports whether s is a day as day files name them (YYYY-MM-DD,
// a real date).
func ValidDay(s string) bool {
	if !dayRE.MatchString(s) {
		return false
	}
	_, err := time.Parse(time.DateOnly, s)
	return err == nil
}

// IsWorkspace reports whether stream is a workspace stream ("ws-" and 20
// hex digits), the streams that get a scopes/ directory.
// The fold asks it of every event, so it is not a regular expression.
func IsWorkspace(stream string) bool {
	if len(stream) != len("ws-")+20 || stream[:3] != "ws-" {
		return false
	}
	for _, c := range []byte(stream[3:]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Rendered is one projection file as the index says it should read.
type Rendered struct {
	Path string
	Data []byte
	Meta FileMeta
	// Text: sync reads this file back, so the files table keeps its
	// bytes (file_texts) to compare a hand edit with.
	Text bool
}

// FileMeta is what the files table records about a file besides its
// hash: the events it reflects. Every field is a function of the event
// prefix, not of how the log was split into folds, so a live index and a
// replayed one record the same.
type FileMeta struct {
	Stream    string            // stream that last changed the file
	Seq       uint64            // and its seq
	Positions map[string]uint64 // day files: the last seq of each stream with a block there
	Time      string            // event time of that change
}

// scopeEntry is an entries row as the renderers need it.
type scopeEntry struct {
	md         markdown.Entry
	tags       []string
	updatedSeq uint64
	updatedAt  string
}

// loadScope reads every entry of scope (any status) and the last change:
// the highest updated_seq, its time.
func loadScope(ctx context.Context, r sqlstore.Reader, scope string) ([]scopeEntry, FileMeta, error) {
	rows, err := r.ScopeEntries(ctx, scope)
	if err != nil {
		return nil, FileMeta{}, err
	}
	out := make([]scopeEntry, 0, len(rows))
	meta := FileMeta{Stream: scope}
	for i := range rows {
		e := scopeEntry{md: mdEntry(&rows[i]), updatedSeq: rows[i].UpdatedSeq, updatedAt: rows[i].UpdatedAt}
		e.tags = e.md.Tags
		if e.updatedSeq > meta.Seq || e.updatedSeq == meta.Seq && e.updatedAt > meta.Time {
			meta.Seq, meta.Time = e.updatedSeq, e.updatedAt
		}
		out = append(out, e)
	}
	return out, meta, nil
}

// mdEntry is an entries row as the Markdown renderers take it.
func mdEntry(r *sqlstore.ProjectedEntry) markdown.Entry {
	e := markdown.Entry{ID: r.ID, Type: r.Type, Title: r.Title, Description: r.Description, Content: r.Content,
		Importance: r.Importance, Status: r.Status, ConflictGroup: r.ConflictGroup}
	_ = json.Unmarshal([]byte(r.Tags), &e.Tags) // a bad tags column shows no tags
	e.Terms = splitTerms(r.Terms)
	return e
}

// splitTerms reads the terms column: items separated by commas or line
// breaks (a JSON array is read too).
func splitTerms(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	var list []string
	if strings.HasPrefix(s, "[") && json.Unmarshal([]byte(s), &list) == nil {
		return list
	}
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' })
}

func shown(status string) bool {
	return status == markdown.StatusActive || status == markdown.StatusConflict
}

// Topic returns the knowledge topic of a global entry of type typ with
// tags, or "" when the entry belongs in global.md: preferences, rules and
// decisions go to global.md; every other type to knowledge/, under its
// first tag, or under its type when it has no tag.
func Topic(typ string, tags []string) string {
	if globalTypes[typ] {
		return ""
	}
	for _, t := range tags {
		if t = strings.TrimSpace(t); t != "" {
			return t
		}
	}
	if typ == "" {
		return payload.DefaultEntryType
	}
	return typ
}

// renderGlobalLayer renders global.md, index.md and one knowledge file
// per topic that has an entry shown (active or conflict). Topics whose
// names give the same file name share it; the file takes the least name.
func renderGlobalLayer(ctx context.Context, r sqlstore.Reader) ([]Rendered, error) {
	es, meta, err := loadScope(ctx, r, globalStream)
	if err != nil {
		return nil, err
	}
	var global, all []markdown.Entry
	type topicFile struct {
		name    string
		entries []markdown.Entry
	}
	files := map[string]*topicFile{}
	for _, e := range es {
		if !shown(e.md.Status) {
			continue
		}
		all = append(all, e.md)
		topic := Topic(e.md.Type, e.tags)
		if topic == "" {
			global = append(global, e.md)
			continue
		}
		name := markdown.TopicFile(topic)
		tf := files[name]
		if tf == nil {
			tf = &topicFile{name: topic}
			files[name] = tf
		}
		if topic < tf.name {
			tf.name = topic
		}
		tf.entries = append(tf.entries, e.md)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	out := []Rendered{{Path: GlobalFile, Data: markdown.RenderGlobal(global), Meta: meta, Text: true}}
	var topics []markdown.Topic
	for _, n := range names {
		tf := files[n]
		data := markdown.RenderKnowledge(tf.name, tf.entries)
		rel := KnowledgeDir + "/" + n
		out = append(out, Rendered{Path: rel, Data: data, Meta: meta, Text: true})
		topics = append(topics, markdown.Topic{Name: tf.name, File: rel, Titles: knowledgeTitles(data)})
	}
	out = append(out, Rendered{Path: IndexFile, Data: markdown.RenderIndex(topics, all), Meta: meta})
	return out, nil
}

// knowledgeTitles lists the titles of a rendered knowledge file in file
// order, so index.md shows them as the file does.
func knowledgeTitles(data []byte) []string {
	doc, err := markdown.Parse(data)
	if err != nil {
		return nil
	}
	var titles []string
	for _, b := range doc.Blocks {
		titles = append(titles, b.Title)
	}
	return titles
}

// renderSummary renders scopes/<scope>/memory_summary.md from the top of
// the scope's ranking: it reads summaryPool entries in the summary's
// order (the entries_summary index), and more only when every one of
// them fit, so a render costs the same at 300 entries and at 30,000.
func renderSummary(ctx context.Context, r sqlstore.Reader, scope string) (Rendered, error) {
	rd, _, err := renderSummaryTop(ctx, r, scope)
	return rd, err
}

// renderSummaryTop is renderSummary that also returns the top of the
// ranking it rendered from.
func renderSummaryTop(ctx context.Context, r sqlstore.Reader, scope string) (Rendered, *summaryTop, error) {
	dir, err := r.Scope(ctx, scope)
	if err != nil {
		return Rendered{}, nil, err
	}
	for pool := summaryPool; ; pool *= 4 {
		top, meta, err := loadSummaryEntries(ctx, r, scope, pool)
		if err != nil {
			return Rendered{}, nil, err
		}
		omitted := top.shown - len(top.rows)
		in := markdown.SummaryInput{ScopeKey: scope, Cwd: dir.Cwd, Entries: top.md, Omitted: omitted}
		data, kept := markdown.RenderSummaryKept(in)
		if kept < len(top.md) || omitted <= 0 {
			return Rendered{Path: SummaryPath(scope), Data: data, Meta: meta}, top, nil
		}
	}
}

// summaryPool is how many entries a summary render reads first; it
// reads four times as many each time all of them fit, until one does
// not (or none is left). Ordinary entries take 150–300 bytes of the
// 3000-byte budget, so the first read is usually the last. (A block
// takes at least ~60 bytes, so fewer than 50 ever fit.)
const summaryPool = 16

// loadSummaryEntries reads the first pool of a scope's shown entries in
// the summary's ranking (markdown.RenderSummary's, kept in SQL by
// sqlstore.Reader.SummaryEntries), how many entries it shows in all
// (entry_counts), and the seq and time of the scope's last entry change.
func loadSummaryEntries(ctx context.Context, r sqlstore.Reader, scope string, pool int) (*summaryTop, FileMeta, error) {
	meta := FileMeta{Stream: scope}
	var err error
	if meta.Seq, meta.Time, err = r.LastEntryChange(ctx, scope); err != nil {
		return nil, meta, err
	}
	top := &summaryTop{pool: pool}
	if top.shown, err = r.ShownCount(ctx, scope); err != nil {
		return nil, meta, err
	}
	if top.rows, err = r.SummaryEntries(ctx, scope, pool); err != nil {
		return nil, meta, err
	}
	top.md = make([]markdown.Entry, 0, len(top.rows))
	for i := range top.rows {
		top.md = append(top.md, summaryEntry(&top.rows[i]))
	}
	return top, meta, nil
}

// summaryEntry is a shown entry as the workspace summary renders it.
func summaryEntry(r *sqlstore.ProjectedEntry) markdown.Entry {
	e := mdEntry(r)
	e.LowConfidence = r.Confidence < payload.LowConfidence
	return e
}

// scopeJSON is the content of scope.json. Part of the on-disk format.
type scopeJSON struct {
	Key string `json:"key"`
	Cwd string `json:"cwd"`
}

// renderScopeFile renders scopes/<scope>/scope.json.
func renderScopeFile(ctx context.Context, r sqlstore.Reader, scope string) (Rendered, error) {
	dir, err := r.Scope(ctx, scope)
	if err != nil {
		return Rendered{}, err
	}
	data, err := json.MarshalIndent(scopeJSON{Key: scope, Cwd: dir.Cwd}, "", "  ")
	if err != nil {
		return Rendered{}, err
	}
	return Rendered{Path: ScopePath(scope), Data: append(data, '\n'), Meta: FileMeta{Stream: scope, Seq: dir.Seq, Time: dir.Time}}, nil
}

// Block is one compaction or session summary of a day file with the
// event it came from.
type Block struct {
	markdown.SessionBlock
	Seq uint64
	At  int64 // the event time as Unix nanoseconds: the order of blocks
}

// BlockOf returns the day-file block an event makes: a compaction/summary
// ({compactionId, text}; block id = compactionId), or a session/end
// whose data has a non-empty "summary" (block id = the session). The day
// is the date of the event's own time, in its own offset. ok is false for
// any other event, and for one whose time does not parse.
func BlockOf(ev *events.Envelope) (day string, b Block, ok bool) {
	var kind, id, text string
	switch ev.Type {
	case events.TypeCompactionSummary:
		var d payload.CompactionSummary
		if payload.Unmarshal(ev.Data, &d) != nil || d.CompactionID == "" {
			return "", Block{}, false
		}
		kind, id, text = "compaction", d.CompactionID, d.Text
	case events.TypeSessionEnd:
		var d payload.SessionEnd
		if payload.Unmarshal(ev.Data, &d) != nil || strings.TrimSpace(d.Summary) == "" || ev.Session == "" {
			return "", Block{}, false
		}
		kind, id, text = "session", ev.Session, d.Summary
	default:
		return "", Block{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, ev.Time)
	if err != nil || len(ev.Time) < 10 || !dayRE.MatchString(ev.Time[:10]) {
		return "", Block{}, false
	}
	return ev.Time[:10], Block{
		SessionBlock: markdown.SessionBlock{Kind: kind, ID: id, Time: ev.Time, Stream: ev.Stream, Session: ev.Session, Text: text},
		Seq:          ev.Seq,
		At:           t.UnixNano(),
	}, true
}

// RenderDay renders sessions/<day>.md from its blocks, in any order:
// they are sorted by (event time, stream, seq), so live folding, replay
// and restore agree whatever order the streams were read in. A repeated
// block id keeps its first block.
func RenderDay(day string, blocks []Block) Rendered {
	bs := slices.Clone(blocks)
	slices.SortFunc(bs, func(a, b Block) int {
		return cmp.Or(cmp.Compare(a.At, b.At), strings.Compare(a.Stream, b.Stream), cmp.Compare(a.Seq, b.Seq))
	})
	sbs := make([]markdown.SessionBlock, len(bs))
	meta := FileMeta{Positions: map[string]uint64{}}
	for i, b := range bs {
		sbs[i] = b.SessionBlock
		meta.Stream, meta.Seq, meta.Time = b.Stream, b.Seq, b.Time
		meta.Positions[b.Stream] = max(meta.Positions[b.Stream], b.Seq)
	}
	return Rendered{Path: DayPath(day), Data: markdown.RenderSessionDay(day, sbs), Meta: meta}
}

// renderDay reads a day's blocks from the index and renders the file,
// at the path the rotation cut-off gives it (DayFile).
func renderDay(ctx context.Context, r sqlstore.Reader, day string) (Rendered, error) {
	rotated, err := r.Rotated(ctx)
	if err != nil {
		return Rendered{}, err
	}
	evs, err := r.DayBlockEvents(ctx, day)
	if err != nil {
		return Rendered{}, err
	}
	var blocks []Block
	for _, e := range evs {
		ev := events.Envelope{Stream: e.Stream, Seq: e.Seq, ID: e.ID, Type: e.Type, Time: e.Time, Session: e.Session, Data: e.Data}
		if d, b, ok := BlockOf(&ev); ok && d == day {
			blocks = append(blocks, b)
		}
	}
	rd := RenderDay(day, blocks)
	rd.Path = DayFile(day, rotated)
	return rd, nil
}

// Render renders one projection path from the index as it stands: the
// bytes Fold would write there now. ok is false when the path is not a
// projection or the index has nothing to put there (a knowledge topic
// without entries, a day without blocks, an unknown scope, a history
// version no longer kept — history files are rendered only while
// folding, so Render reports them as not available).
func (p *Projector) Render(ctx context.Context, rel string) (r Rendered, ok bool, err error) {
	return render(ctx, p.s.Reader(), rel)
}

// render renders rel from what q reads.
func render(ctx context.Context, q sqlstore.Reader, rel string) (r Rendered, ok bool, err error) {
	info, ok := ParsePath(rel)
	if !ok {
		return Rendered{}, false, nil
	}
	switch info.Kind {
	case KindGlobal, KindIndex, KindKnowledge:
		rs, err := renderGlobalLayer(ctx, q)
		if err != nil {
			return Rendered{}, false, err
		}
		for _, r := range rs {
			if r.Path == rel {
				return r, true, nil
			}
		}
		return Rendered{}, false, nil
	case KindSummary, KindScope:
		if folded, err := q.Folded(ctx, info.Scope); err != nil || !folded {
			return Rendered{}, false, err
		}
		// An archived scope's files are under archived/, a live one's
		// under scopes/: the other path is not rendered.
		if archived, err := q.ScopeArchived(ctx, info.Scope); err != nil || archived != info.Archived {
			return Rendered{}, false, err
		}
		if info.Kind == KindScope {
			r, err = renderScopeFile(ctx, q, info.Scope)
		} else {
			r, err = renderSummary(ctx, q, info.Scope)
		}
		r.Path = rel
		return r, err == nil, err
	case KindDay:
		r, err := renderDay(ctx, q, info.Day)
		if err != nil || len(r.Meta.Positions) == 0 || r.Path != rel {
			return Rendered{}, false, err // r.Path != rel: the day lives on the other side of the rotation
		}
		return r, true, nil
	}
	return Rendered{}, false, nil
}
