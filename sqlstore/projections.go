package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// querier is what a Reader runs its queries on: the pool, a read
// transaction, or a fold's transaction (foldQuerier).
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Reader runs the reads the Markdown projections are rendered from, on
// one handle: the pool (Store.Reader), one snapshot (Store.BeginRead) or
// a fold's transaction (FoldTx.Reader), where it sees the fold's own
// writes.
type Reader struct{ q querier }

// Reader reads the index as it stands, each query on its own.
func (s *Store) Reader() Reader { return Reader{s.db} }

// ReadTx is a read-only snapshot of the index: every read of its Reader
// sees the same moment.
type ReadTx struct {
	Reader
	tx *sql.Tx
}

// BeginRead starts a read-only snapshot; Close ends it.
func (s *Store) BeginRead(ctx context.Context) (*ReadTx, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	return &ReadTx{Reader: Reader{tx}, tx: tx}, nil
}

// Close ends the snapshot.
func (t *ReadTx) Close() error { return t.tx.Rollback() }

// ProjectedEntry is an entries row as the Markdown projections show it.
type ProjectedEntry struct {
	ID, Type, Title    string
	Description, Terms string
	Content            string
	Tags               string // the column: a JSON array
	Importance         int
	Status             string
	ConflictGroup      string
	UpdatedSeq         uint64  // ScopeEntries only
	UpdatedAt          string  // ScopeEntries only
	Confidence         float64 // SummaryEntries and ShownEntry only
}

// ScopeEntries reads every entry of scope, whatever its status, in id
// order.
func (r Reader) ScopeEntries(ctx context.Context, scope string) ([]ProjectedEntry, error) {
	rows, err := r.q.QueryContext(ctx, `SELECT id, type, title, description, terms, content, tags, importance,
			status, conflict_group, updated_seq, updated_at
		FROM entries WHERE scope = ? ORDER BY id`, scope)
	if err != nil {
		return nil, fmt.Errorf("read entries of %s: %w", scope, err)
	}
	defer rows.Close()
	var out []ProjectedEntry
	for rows.Next() {
		var e ProjectedEntry
		var seq int64
		if err := rows.Scan(&e.ID, &e.Type, &e.Title, &e.Description, &e.Terms, &e.Content, &e.Tags,
			&e.Importance, &e.Status, &e.ConflictGroup, &seq, &e.UpdatedAt); err != nil {
			return nil, fmt.Errorf("read entries of %s: %w", scope, err)
		}
		e.UpdatedSeq = uint64(seq)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read entries of %s: %w", scope, err)
	}
	return out, nil
}

// summaryOrder is markdown.RenderSummary's ranking in SQL: active before
// conflict, importance high first, the type order of global.md, then id.
// The entries_summary index (migration 00007) holds these expressions
// character for character; a change here must change it too.
const summaryOrder = `(CASE status WHEN 'conflict' THEN 1 ELSE 0 END),
	importance DESC,
	(CASE type WHEN 'preference' THEN 0 WHEN 'rule' THEN 1 WHEN 'decision' THEN 2
		WHEN 'architecture' THEN 3 WHEN 'procedure' THEN 4 WHEN 'fix' THEN 5
		WHEN 'fact' THEN 6 WHEN '' THEN 8 ELSE 7 END),
	type, id`

// SummaryEntries reads the first limit shown (active or conflict)
// entries of scope in the ranking of its workspace summary, through the
// entries_summary index: the cost does not grow with the scope.
func (r Reader) SummaryEntries(ctx context.Context, scope string, limit int) ([]ProjectedEntry, error) {
	rows, err := r.q.QueryContext(ctx, `SELECT id, type, title, description, terms, content, tags, importance,
			status, conflict_group, confidence
		FROM entries INDEXED BY entries_summary WHERE scope = ? AND status IN ('active', 'conflict')
		ORDER BY `+summaryOrder+` LIMIT ?`, scope, limit)
	if err != nil {
		return nil, fmt.Errorf("read entries of %s: %w", scope, err)
	}
	defer rows.Close()
	var out []ProjectedEntry
	for rows.Next() {
		var e ProjectedEntry
		if err := rows.Scan(&e.ID, &e.Type, &e.Title, &e.Description, &e.Terms, &e.Content, &e.Tags,
			&e.Importance, &e.Status, &e.ConflictGroup, &e.Confidence); err != nil {
			return nil, fmt.Errorf("read entries of %s: %w", scope, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read entries of %s: %w", scope, err)
	}
	return out, nil
}

// ShownEntry reads entry id of scope as SummaryEntries reads it; ok is
// false unless the entry exists there and is shown (active or conflict).
func (r Reader) ShownEntry(ctx context.Context, scope, id string) (e ProjectedEntry, ok bool, err error) {
	err = r.q.QueryRowContext(ctx, `SELECT id, type, title, description, terms, content, tags, importance,
			status, conflict_group, confidence
		FROM entries WHERE id = ? AND scope = ? AND status IN ('active', 'conflict')`, id, scope).
		Scan(&e.ID, &e.Type, &e.Title, &e.Description, &e.Terms, &e.Content, &e.Tags,
			&e.Importance, &e.Status, &e.ConflictGroup, &e.Confidence)
	if errors.Is(err, sql.ErrNoRows) {
		return ProjectedEntry{}, false, nil
	}
	if err != nil {
		return ProjectedEntry{}, false, fmt.Errorf("read entry %s: %w", id, err)
	}
	return e, true, nil
}

// SummaryCompare orders two shown entries as summaryOrder does, so that
// a caller holding the top of the ranking can place one more entry in it
// without asking SQLite (SQLite compares TEXT bytewise, as
// strings.Compare does). TestSummaryCompareIsSQLOrder holds them equal.
func SummaryCompare(a, b *ProjectedEntry) int {
	return cmp.Or(
		cmp.Compare(summaryStatusRank(a.Status), summaryStatusRank(b.Status)),
		cmp.Compare(b.Importance, a.Importance),
		cmp.Compare(summaryTypeRank(a.Type), summaryTypeRank(b.Type)),
		strings.Compare(a.Type, b.Type),
		strings.Compare(a.ID, b.ID),
	)
}

func summaryStatusRank(status string) int {
	if status == "conflict" {
		return 1
	}
	return 0
}

func summaryTypeRank(typ string) int {
	switch typ {
	case "preference":
		return 0
	case "rule":
		return 1
	case "decision":
		return 2
	case "architecture":
		return 3
	case "procedure":
		return 4
	case "fix":
		return 5
	case "fact":
		return 6
	case "":
		return 8
	}
	return 7
}

// LastEntryChange returns the seq and time of the last change to an
// entry of scope (0 and "" when it has none).
func (r Reader) LastEntryChange(ctx context.Context, scope string) (seq uint64, at string, err error) {
	var s sql.NullInt64
	var t sql.NullString
	err = r.q.QueryRowContext(ctx, `SELECT updated_seq, updated_at FROM entries WHERE scope = ?
		ORDER BY updated_seq DESC, updated_at DESC LIMIT 1`, scope).Scan(&s, &t)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, "", fmt.Errorf("read entries of %s: %w", scope, err)
	}
	return uint64(s.Int64), t.String, nil
}

// ShownCount returns how many entries of scope are shown (active or
// conflict), from the counts entry_counts keeps by trigger.
func (r Reader) ShownCount(ctx context.Context, scope string) (int, error) {
	var n int
	err := r.q.QueryRowContext(ctx, `SELECT coalesce((SELECT shown FROM entry_counts WHERE scope = ?), 0)`, scope).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count entries of %s: %w", scope, err)
	}
	return n, nil
}

// ScopeDir is the scopes row of a workspace stream: its directory and
// the event that gave it.
type ScopeDir struct {
	Cwd  string
	Seq  uint64
	Time string
}

// Scope returns the directory recorded for workspace stream (the
// zero ScopeDir when none is).
func (r Reader) Scope(ctx context.Context, stream string) (ScopeDir, error) {
	var d ScopeDir
	var seq int64
	err := r.q.QueryRowContext(ctx, `SELECT cwd, seq, time FROM scopes WHERE stream = ?`, stream).Scan(&d.Cwd, &seq, &d.Time)
	if errors.Is(err, sql.ErrNoRows) {
		return ScopeDir{}, nil
	}
	if err != nil {
		return ScopeDir{}, fmt.Errorf("read scope %s: %w", stream, err)
	}
	d.Seq = uint64(seq)
	return d, nil
}

// Folded reports whether stream has a cursor: some of it was folded.
func (r Reader) Folded(ctx context.Context, stream string) (bool, error) {
	var n int
	if err := r.q.QueryRowContext(ctx, `SELECT count(*) FROM cursors WHERE stream = ?`, stream).Scan(&n); err != nil {
		return false, fmt.Errorf("read cursor of %s: %w", stream, err)
	}
	return n > 0, nil
}

// DayBlockEvents returns the events that may hold a block of the day
// file of day (YYYY-MM-DD): compaction summaries and session ends whose
// time starts with day (the events_day_blocks index), in no order.
func (r Reader) DayBlockEvents(ctx context.Context, day string) ([]Event, error) {
	rows, err := r.q.QueryContext(ctx, `SELECT stream, seq, id, type, time, session, coalesce(data, '')
		FROM events WHERE substr(time, 1, 10) = ? AND type IN ('compaction/summary', 'session/end')`, day)
	if err != nil {
		return nil, fmt.Errorf("read blocks of %s: %w", day, err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var ev Event
		var seq int64
		var data string
		if err := rows.Scan(&ev.Stream, &seq, &ev.ID, &ev.Type, &ev.Time, &ev.Session, &data); err != nil {
			return nil, fmt.Errorf("read blocks of %s: %w", day, err)
		}
		ev.Seq, ev.Data = uint64(seq), json.RawMessage(data)
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read blocks of %s: %w", day, err)
	}
	return out, nil
}

// SummaryVersion is one kept version of a workspace summary.
type SummaryVersion struct {
	Seq     uint64
	Time    string
	SHA256  string // of Content
	Content string
}

// SummaryVersions returns the kept summary versions of stream, oldest
// first.
func (r Reader) SummaryVersions(ctx context.Context, stream string) ([]SummaryVersion, error) {
	rows, err := r.q.QueryContext(ctx, `SELECT seq, time, sha256, content FROM summary_versions WHERE stream = ? ORDER BY seq`, stream)
	if err != nil {
		return nil, fmt.Errorf("read summary versions of %s: %w", stream, err)
	}
	defer rows.Close()
	var out []SummaryVersion
	for rows.Next() {
		var v SummaryVersion
		var seq int64
		if err := rows.Scan(&seq, &v.Time, &v.SHA256, &v.Content); err != nil {
			return nil, fmt.Errorf("read summary versions of %s: %w", stream, err)
		}
		v.Seq = uint64(seq)
		out = append(out, v)
	}
	return out, rows.Err()
}

// FileRow is a files row: a projection as dshmem last wrote it, with the
// text file_texts keeps of it ("" for files it keeps none of).
type FileRow struct {
	Path      string
	SHA256    string
	Bytes     int64
	Stream    string
	Seq       uint64
	Positions string // JSON object: stream → last seq of a day file's blocks
	Time      string
	Text      string
}

// Files returns the rows of the files table in path order.
func (r Reader) Files(ctx context.Context) ([]FileRow, error) {
	rows, err := r.q.QueryContext(ctx, `SELECT f.path, f.sha256, f.bytes, f.stream, f.seq, f.positions, f.time,
			coalesce(t.content, '')
		FROM files f LEFT JOIN file_texts t ON t.path = f.path ORDER BY f.path`)
	if err != nil {
		return nil, fmt.Errorf("read files: %w", err)
	}
	defer rows.Close()
	var out []FileRow
	for rows.Next() {
		var f FileRow
		var seq int64
		if err := rows.Scan(&f.Path, &f.SHA256, &f.Bytes, &f.Stream, &seq, &f.Positions, &f.Time, &f.Text); err != nil {
			return nil, fmt.Errorf("read files: %w", err)
		}
		f.Seq = uint64(seq)
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read files: %w", err)
	}
	return out, nil
}

// FilesUnder lists the paths that start with prefix which dshmem wrote:
// those the files table records, and those files_intent says a write put
// in place without recording them (it failed, or a crash came, between
// the two).
func (r Reader) FilesUnder(ctx context.Context, prefix string) ([]string, error) {
	rows, err := r.q.QueryContext(ctx, `SELECT path FROM files WHERE substr(path, 1, ?1) = ?2
		UNION SELECT path FROM files_intent WHERE substr(path, 1, ?1) = ?2 ORDER BY path`, len(prefix), prefix)
	if err != nil {
		return nil, fmt.Errorf("read files under %s: %w", prefix, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("read files under %s: %w", prefix, err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// QueuedGroup is one group of files waiting in projection_queue, with
// the generation it was read at (a group queued again meanwhile has a
// higher one and stays queued).
type QueuedGroup struct {
	Key string
	Gen int64
}

// FileQueue returns the queued groups of files in key order.
func (r Reader) FileQueue(ctx context.Context) ([]QueuedGroup, error) {
	rows, err := r.q.QueryContext(ctx, `SELECT key, gen FROM projection_queue ORDER BY key`)
	if err != nil {
		return nil, fmt.Errorf("read projection queue: %w", err)
	}
	defer rows.Close()
	var out []QueuedGroup
	for rows.Next() {
		var q QueuedGroup
		if err := rows.Scan(&q.Key, &q.Gen); err != nil {
			return nil, fmt.Errorf("read projection queue: %w", err)
		}
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read projection queue: %w", err)
	}
	return out, nil
}
