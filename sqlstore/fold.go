package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// FoldTx is the write transaction of one projector fold: the events, the
// projections they feed and the cursors commit together or not at all.
// Each statement a fold runs is a method here.
//
// A fold runs many small statements, so FoldTx prepares each query once
// per transaction, from the copy the Store keeps prepared on its pool
// when there is one (each connection then parses a query once, not in
// every fold: a fold of one event would spend more on parsing than on
// inserting). A query first met inside a fold is prepared on the
// transaction, and on the pool once the transaction has ended: the
// transaction may hold the pool's only connection (a rebuild's).
//
// Statements run with a background context: the modernc driver starts a
// goroutine per statement to watch a cancellable context, which would
// cost more than the insert. The projector checks its context between
// events.
//
// The FTS5 writes (IndexEntry, ReindexEntry, InsertEpisode) wait in text
// until Commit, which runs them, in order, after every other statement;
// the episodes rows wait too, and are written 64 to a statement.
// FTS5 keeps the terms of a transaction in memory and writes them as one
// segment at the end, but flushes them early whenever a later statement
// of the transaction opens a statement savepoint (an insert with a
// trigger, an upsert): interleaved with the other rows, each entry or
// episode became a segment of its own, and the segment merges that
// follow cost more than the inserts. Nothing in a fold reads the FTS
// tables, so only when they are written changes.
type FoldTx struct {
	s          *Store
	tx         *sql.Tx
	stmts      map[string]*sql.Stmt
	unprepared []string // queries to prepare on the pool once the transaction ends
	text       []textWrite
	episodes   []any // (n, injected) pairs of InsertEpisode, written at Commit
}

// episodeRows is how many episodes rows one statement of Commit writes
// (one statement a row cost 0.9 s of a 200k-event ingest's fold).
const episodeRows = 64

var insertEpisodesSQL = `INSERT INTO episodes (n, injected) VALUES (?, ?)` + strings.Repeat(`, (?, ?)`, episodeRows-1)

// textWrite is an FTS5 statement held until Commit; what names it in an
// error.
type textWrite struct {
	query string
	args  []any
	what  string
}

// BeginFold starts a fold's transaction. It takes the write lock at
// BEGIN (_txlock=immediate), so two writers queue on busy_timeout.
// Close must follow, committed or not.
func (s *Store) BeginFold(ctx context.Context) (*FoldTx, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return &FoldTx{s: s, tx: tx}, nil
}

// Commit runs the held FTS5 writes and commits the fold.
func (t *FoldTx) Commit() error {
	// The episodes rows first: nothing in a fold reads them, and a
	// statement after the FTS5 writes would flush their terms early.
	eps := t.episodes
	for ; len(eps) >= 2*episodeRows; eps = eps[2*episodeRows:] {
		if _, err := t.exec(insertEpisodesSQL, eps[:2*episodeRows]...); err != nil {
			return fmt.Errorf("insert episodes: %w", err)
		}
	}
	for ; len(eps) > 0; eps = eps[2:] {
		if _, err := t.exec(`INSERT INTO episodes (n, injected) VALUES (?, ?)`, eps[0], eps[1]); err != nil {
			return fmt.Errorf("insert episode %v: %w", eps[0], err)
		}
	}
	t.episodes = nil
	for i := range t.text {
		w := &t.text[i]
		if _, err := t.exec(w.query, w.args...); err != nil {
			return fmt.Errorf("%s: %w", w.what, err)
		}
	}
	t.text = nil
	if err := t.tx.Commit(); err != nil {
		return err
	}
	t.s.noteCommit()
	return nil
}

// holdText queues an FTS5 write for Commit.
func (t *FoldTx) holdText(what, query string, args ...any) {
	t.text = append(t.text, textWrite{query: query, args: args, what: what})
}

// Close rolls the transaction back unless Commit ran, closes its
// statements, and prepares on the pool the queries it met first.
func (t *FoldTx) Close() {
	for _, st := range t.stmts {
		st.Close()
	}
	t.stmts = nil
	_ = t.tx.Rollback() // sql.ErrTxDone after a Commit
	for _, q := range t.unprepared {
		t.s.prepareFold(q)
	}
	t.unprepared = nil
}

// preparedFold returns query prepared on the pool, or nil; Tx.Stmt then
// uses the connection's own prepared copy.
func (s *Store) preparedFold(query string) *sql.Stmt {
	s.foldMu.Lock()
	defer s.foldMu.Unlock()
	return s.foldStmts[query]
}

// prepareFold prepares query on the pool for the next folds. It must not
// run inside a fold: it may need a connection of its own.
func (s *Store) prepareFold(query string) {
	s.foldMu.Lock()
	defer s.foldMu.Unlock()
	if _, ok := s.foldStmts[query]; ok {
		return
	}
	st, err := s.db.Prepare(query)
	if err != nil {
		return // the next fold prepares it on its transaction again
	}
	if s.foldStmts == nil {
		s.foldStmts = map[string]*sql.Stmt{}
	}
	s.foldStmts[query] = st
}

// stmt returns the statement for query, prepared on the transaction the
// first time it is needed.
func (t *FoldTx) stmt(query string) (*sql.Stmt, error) {
	if st, ok := t.stmts[query]; ok {
		return st, nil
	}
	var st *sql.Stmt
	if ps := t.s.preparedFold(query); ps != nil {
		st = t.tx.Stmt(ps) // the connection's own copy, prepared once
	} else {
		var err error
		if st, err = t.tx.Prepare(query); err != nil {
			return nil, fmt.Errorf("prepare: %w", err)
		}
		t.unprepared = append(t.unprepared, query)
	}
	if t.stmts == nil {
		t.stmts = map[string]*sql.Stmt{}
	}
	t.stmts[query] = st
	return st, nil
}

// queryRow runs a one-row query through its prepared statement; a
// failed prepare is reported by the row's Scan.
func (t *FoldTx) queryRow(query string, args ...any) *sql.Row {
	return foldQuerier{t}.QueryRowContext(context.Background(), query, args...)
}

// query runs query through its prepared statement.
func (t *FoldTx) query(query string, args ...any) (*sql.Rows, error) {
	return foldQuerier{t}.QueryContext(context.Background(), query, args...)
}

func (t *FoldTx) exec(query string, args ...any) (sql.Result, error) {
	st, err := t.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.Exec(args...)
}

// foldQuerier runs a Reader's queries on the fold's transaction through
// its prepared statements: a fold of many memory events renders a
// workspace summary after each.
type foldQuerier struct{ t *FoldTx }

func (q foldQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := q.t.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (q foldQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := q.t.stmt(query)
	if err != nil {
		return q.t.tx.QueryRowContext(ctx, query, args...) // reports the same error
	}
	return st.QueryRowContext(ctx, args...)
}

// Reader reads the index as the fold has changed it so far.
func (t *FoldTx) Reader() Reader { return Reader{foldQuerier{t}} }

// Cursor returns the last seq of stream folded (0 when none).
func (t *FoldTx) Cursor(stream string) (uint64, error) {
	var seq int64
	err := t.queryRow(`SELECT seq FROM cursors WHERE stream = ?`, stream).Scan(&seq)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("read cursor of %s: %w", stream, err)
	}
	return uint64(seq), nil
}

const setCursorSQL = `INSERT INTO cursors (stream, seq) VALUES (?, ?)
			ON CONFLICT (stream) DO UPDATE SET seq = excluded.seq`

// SetCursor records that stream is folded up to seq.
func (t *FoldTx) SetCursor(stream string, seq uint64) error {
	if _, err := t.exec(setCursorSQL, stream, int64(seq)); err != nil {
		return fmt.Errorf("write cursor of %s: %w", stream, err)
	}
	return nil
}

const noteEventTimeSQL = `INSERT INTO event_span (id, first_time) VALUES (1, ?)
			ON CONFLICT (id) DO UPDATE SET first_time = min(first_time, excluded.first_time)`

// NoteEventTime lowers the oldest event time on record (event_span) to time,
// the least time of the fold's events.
func (t *FoldTx) NoteEventTime(time string) error {
	if _, err := t.exec(noteEventTimeSQL, time); err != nil {
		return fmt.Errorf("write the oldest event time: %w", err)
	}
	return nil
}

// Event is one events row. Data is nil when the event has none.
type Event struct {
	Stream  string
	Seq     uint64
	ID      string
	Type    string
	Time    string
	Session string
	Data    json.RawMessage
}

const insertEventSQL = `INSERT INTO events (stream, seq, id, type, time, session, data) VALUES (?, ?, ?, ?, ?, ?, ?)`

// InsertEvent writes the events row of ev and returns its row number n
// (events.n, the rowid its episode is indexed under). Data that is
// empty or the JSON null is stored as NULL.
func (t *FoldTx) InsertEvent(ev *Event) (n int64, err error) {
	var data any // NULL when the event has no data
	if len(ev.Data) > 0 && string(ev.Data) != "null" {
		data = string(ev.Data)
	}
	res, err := t.exec(insertEventSQL, ev.Stream, int64(ev.Seq), ev.ID, ev.Type, ev.Time, ev.Session, data)
	if err != nil {
		return 0, fmt.Errorf("insert event: %w", err)
	}
	if n, err = res.LastInsertId(); err != nil {
		return 0, fmt.Errorf("insert event: %w", err)
	}
	return n, nil
}

// InsertEpisode indexes event row n as an episode: terms are its
// distinct terms joined by spaces (its episodes and episodes_fts rows
// are written at Commit),
// injected flags text the host injected.
func (t *FoldTx) InsertEpisode(n int64, injected bool, terms string) error {
	t.episodes = append(t.episodes, n, injected)
	t.holdText(fmt.Sprintf("index episode %d", n), `INSERT INTO episodes_fts (rowid, bigrams) VALUES (?, ?)`, n, terms)
	return nil
}

// SessionDelta is what one fold learned about one session in one stream,
// merged into its sessions row by UpsertSession.
type SessionDelta struct {
	Session, Stream     string
	FirstSeq, LastSeq   uint64
	FirstTime, LastTime string
	Events              int64
	UserTurns           int64
	UserChars           int64

	Cwd          string
	CwdFromStart bool // Cwd came from a session/start: it overrides

	Started                     bool // a session/start was folded
	Origin, Parent, AgentPreset string
	StartedAt                   string
	EndedAt                     string
}

// upsertSessionSQL merges a SessionDelta into the row. ?16 is
// CwdFromStart, ?17 is Started.
const upsertSessionSQL = `
INSERT INTO sessions (session, stream, cwd, origin, parent, agent_preset, started_at, ended_at,
                      first_seq, last_seq, first_time, last_time, events, user_turns, user_chars)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
ON CONFLICT (session, stream) DO UPDATE SET
    cwd          = CASE WHEN ?16 OR sessions.cwd = '' THEN excluded.cwd ELSE sessions.cwd END,
    origin       = CASE WHEN ?17 THEN excluded.origin ELSE sessions.origin END,
    parent       = CASE WHEN ?17 THEN excluded.parent ELSE sessions.parent END,
    agent_preset = CASE WHEN ?17 THEN excluded.agent_preset ELSE sessions.agent_preset END,
    started_at   = CASE WHEN ?17 THEN excluded.started_at ELSE sessions.started_at END,
    ended_at     = CASE WHEN excluded.ended_at <> '' THEN excluded.ended_at ELSE sessions.ended_at END,
    last_seq     = excluded.last_seq,
    last_time    = excluded.last_time,
    events       = sessions.events + excluded.events,
    user_turns   = sessions.user_turns + excluded.user_turns,
    user_chars   = sessions.user_chars + excluded.user_chars`

// UpsertSession merges d into its sessions row, by rules that give the
// same row however a stream's events were split into folds: the first
// seq and time stay, the last move, counts add up, a session/start's
// fields and cwd override, another cwd only fills an empty one.
func (t *FoldTx) UpsertSession(d *SessionDelta) error {
	if _, err := t.exec(upsertSessionSQL, d.Session, d.Stream, d.Cwd, d.Origin, d.Parent, d.AgentPreset,
		d.StartedAt, d.EndedAt, int64(d.FirstSeq), int64(d.LastSeq), d.FirstTime, d.LastTime,
		d.Events, d.UserTurns, d.UserChars, d.CwdFromStart, d.Started); err != nil {
		return fmt.Errorf("write session %s of %s: %w", d.Session, d.Stream, err)
	}
	return nil
}

// RecordShown counts one more showing of entry to session, by an event
// of stream at seq and time.
func (t *FoldTx) RecordShown(session, stream, entry string, seq uint64, time string) error {
	if _, err := t.exec(`INSERT INTO shown (session, stream, entry_id, count, last_seq, last_time)
			VALUES (?, ?, ?, 1, ?, ?)
			ON CONFLICT (session, stream, entry_id) DO UPDATE SET
				count = count + 1, last_seq = excluded.last_seq, last_time = excluded.last_time`,
		session, stream, entry, int64(seq), time); err != nil {
		return fmt.Errorf("record entry %s shown to %s: %w", entry, session, err)
	}
	return nil
}

// EntryRow is an entries row as a fold writes and reads it. Tags and
// Provenance are the JSON texts of their columns.
type EntryRow struct {
	N                  int64 // entries.n = entries_fts.rowid
	ID, Scope, Type    string
	Title, Description string
	Terms, Content     string
	Tags               string
	Importance         int
	Confidence         float64
	Status             string
	ConflictGroup      string
	Supersedes         string
	SupersededBy       string
	Provenance         string
	Version            int64
}

// EntryExists reports whether an entry with id exists in any scope.
func (t *FoldTx) EntryExists(id string) (bool, error) {
	var n int
	if err := t.queryRow(`SELECT count(*) FROM entries WHERE id = ?`, id).Scan(&n); err != nil {
		return false, fmt.Errorf("look up entry %s: %w", id, err)
	}
	return n > 0, nil
}

// InsertEntry writes a new entries row, created and updated by the event
// at seq and time, and returns its row number (e.N is not read).
func (t *FoldTx) InsertEntry(e *EntryRow, seq uint64, time string) (n int64, err error) {
	res, err := t.exec(`INSERT INTO entries (id, scope, type, title, description, terms, content, tags,
			importance, confidence, status, conflict_group, supersedes, superseded_by, provenance,
			created_at, updated_at, version, created_seq, updated_seq)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.Scope, e.Type, e.Title, e.Description, e.Terms, e.Content, e.Tags,
		e.Importance, e.Confidence, e.Status, e.ConflictGroup, e.Supersedes, e.SupersededBy, e.Provenance,
		time, time, e.Version, int64(seq), int64(seq))
	if err != nil {
		return 0, fmt.Errorf("insert entry %s: %w", e.ID, err)
	}
	if n, err = res.LastInsertId(); err != nil {
		return 0, fmt.Errorf("insert entry %s: %w", e.ID, err)
	}
	return n, nil
}

// UpdateEntry writes every column of entry e.ID but its scope and
// creation, as updated by the event at seq and time.
func (t *FoldTx) UpdateEntry(e *EntryRow, seq uint64, time string) error {
	if _, err := t.exec(`UPDATE entries SET type = ?, title = ?, description = ?, terms = ?, content = ?, tags = ?,
			importance = ?, confidence = ?, status = ?, conflict_group = ?, supersedes = ?, superseded_by = ?,
			provenance = ?, updated_at = ?, version = ?, updated_seq = ?
		WHERE id = ?`,
		e.Type, e.Title, e.Description, e.Terms, e.Content, e.Tags,
		e.Importance, e.Confidence, e.Status, e.ConflictGroup, e.Supersedes, e.SupersededBy,
		e.Provenance, time, e.Version, int64(seq), e.ID); err != nil {
		return fmt.Errorf("update entry %s: %w", e.ID, err)
	}
	return nil
}

// LoadEntry reads entry id of scope; ok is false when there is none.
func (t *FoldTx) LoadEntry(id, scope string) (e EntryRow, ok bool, err error) {
	err = t.queryRow(`SELECT n, id, scope, type, title, description, terms, content, tags,
			importance, confidence, status, conflict_group, supersedes, superseded_by, provenance, version
		FROM entries WHERE id = ? AND scope = ?`, id, scope).
		Scan(&e.N, &e.ID, &e.Scope, &e.Type, &e.Title, &e.Description, &e.Terms, &e.Content, &e.Tags,
			&e.Importance, &e.Confidence, &e.Status, &e.ConflictGroup, &e.Supersedes, &e.SupersededBy, &e.Provenance, &e.Version)
	if errors.Is(err, sql.ErrNoRows) {
		return EntryRow{}, false, nil
	}
	if err != nil {
		return EntryRow{}, false, fmt.Errorf("read entry %s: %w", id, err)
	}
	return e, true, nil
}

// IndexEntry writes the entries_fts row of entry row n (id names it in
// errors) at Commit. An entry's index row is replaced with ReindexEntry.
func (t *FoldTx) IndexEntry(n int64, id, title, body, bigrams string) error {
	t.holdText("index entry "+id, `INSERT INTO entries_fts (rowid, title, body, bigrams) VALUES (?, ?, ?, ?)`,
		n, title, body, bigrams)
	return nil
}

// ReindexEntry replaces the entries_fts row of entry row n at Commit.
func (t *FoldTx) ReindexEntry(n int64, id, title, body, bigrams string) error {
	t.holdText("reindex entry "+id, `DELETE FROM entries_fts WHERE rowid = ?`, n)
	return t.IndexEntry(n, id, title, body, bigrams)
}

// VersionRow is an entry_versions row: the state of an entry after the
// op of the event at (Stream, Seq). Tags is a JSON array.
type VersionRow struct {
	EntryID            string
	Version            int64
	Stream             string
	Seq                uint64
	EventID, Op, Time  string
	Type, Title        string
	Description, Terms string
	Content, Tags      string
	Importance         int
	Confidence         float64
	Status, Reason     string
}

// InsertVersion writes an entry_versions row.
func (t *FoldTx) InsertVersion(v *VersionRow) error {
	if _, err := t.exec(`INSERT INTO entry_versions (entry_id, version, stream, seq, event_id, op, time,
			type, title, description, terms, content, tags, importance, confidence, status, reason)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		v.EntryID, v.Version, v.Stream, int64(v.Seq), v.EventID, v.Op, v.Time,
		v.Type, v.Title, v.Description, v.Terms, v.Content, v.Tags, v.Importance, v.Confidence, v.Status, v.Reason); err != nil {
		return fmt.Errorf("insert version %d of entry %s: %w", v.Version, v.EntryID, err)
	}
	return nil
}

// ConflictContenders lists, in id order, the entries of scope still in
// status conflict in group.
func (t *FoldTx) ConflictContenders(scope, group string) ([]string, error) {
	rows, err := t.query(`SELECT id FROM entries WHERE scope = ? AND conflict_group = ? AND status = 'conflict' ORDER BY id`,
		scope, group)
	if err != nil {
		return nil, fmt.Errorf("read conflict group %s: %w", group, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("read conflict group %s: %w", group, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read conflict group %s: %w", group, err)
	}
	return ids, nil
}

// RegisterScope records dir as the directory of workspace stream, from
// the scope/register event at seq and time: it replaces any cwd seen
// before.
func (t *FoldTx) RegisterScope(stream, dir string, seq uint64, time string) error {
	if _, err := t.exec(`INSERT INTO scopes (stream, cwd, seq, time) VALUES (?, ?, ?, ?)
				ON CONFLICT (stream) DO UPDATE SET cwd = excluded.cwd, seq = excluded.seq, time = excluded.time`,
		stream, dir, int64(seq), time); err != nil {
		return fmt.Errorf("record scope %s: %w", stream, err)
	}
	return nil
}

// RecordScopeCwd records cwd, of the event at seq and time, as the
// directory of workspace stream unless one is recorded already; added
// says whether it was.
func (t *FoldTx) RecordScopeCwd(stream, cwd string, seq uint64, time string) (added bool, err error) {
	res, err := t.exec(`INSERT INTO scopes (stream, cwd, seq, time) VALUES (?, ?, ?, ?)
				ON CONFLICT (stream) DO NOTHING`, stream, cwd, int64(seq), time)
	if err != nil {
		return false, fmt.Errorf("record scope %s: %w", stream, err)
	}
	n, err := res.RowsAffected()
	return err != nil || n > 0, nil // when unsure, say added: its files are rendered again
}

// queueSQL queues a group of projection files, or bumps its generation
// when it is queued already.
const queueSQL = `INSERT INTO projection_queue (key, gen) VALUES (?, 1)
		ON CONFLICT (key) DO UPDATE SET gen = gen + 1`

// QueueFiles queues the group of projection files key (written after
// the commit, see Store.RecordFiles).
func (t *FoldTx) QueueFiles(key string) error {
	if _, err := t.exec(queueSQL, key); err != nil {
		return fmt.Errorf("queue files %s: %w", key, err)
	}
	return nil
}

// LastSummarySHA returns the sha256 of the newest kept summary version
// of stream ("" when none).
func (t *FoldTx) LastSummarySHA(stream string) (string, error) {
	var last string
	err := t.queryRow(`SELECT sha256 FROM summary_versions WHERE stream = ? ORDER BY seq DESC LIMIT 1`,
		stream).Scan(&last)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("read summary versions of %s: %w", stream, err)
	}
	return last, nil
}

// AddSummaryVersions keeps vs (in seq order, each above the stream's
// newest kept version) as summaries of stream, and drops all but the
// newest keep versions.
func (t *FoldTx) AddSummaryVersions(stream string, vs []SummaryVersion, keep int) error {
	if len(vs) == 0 {
		return nil
	}
	for _, v := range vs {
		if _, err := t.exec(`INSERT INTO summary_versions (stream, seq, time, sha256, content) VALUES (?, ?, ?, ?, ?)`,
			stream, int64(v.Seq), v.Time, v.SHA256, v.Content); err != nil {
			return fmt.Errorf("record summary version %s seq %d: %w", stream, v.Seq, err)
		}
	}
	if _, err := t.exec(`DELETE FROM summary_versions WHERE stream = ?1 AND seq <= (
			SELECT seq FROM summary_versions WHERE stream = ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?2)`,
		stream, keep); err != nil {
		return fmt.Errorf("drop old summary versions of %s: %w", stream, err)
	}
	return nil
}
