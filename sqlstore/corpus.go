package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"weak"
)

// Corpus names a full-text index that recall (sqlstore/recall) ranks,
// and the rows of it a query may return. Every query on a corpus is
// bounded: probes read at most a LIMIT of rowids newest first (FTS5
// walks a doclist backwards without sorting), fetches read the rows of a
// bounded pool by rowid.
type Corpus int

const (
	// CorpusEntries is entries_fts, whose bigrams column holds
	// tokenize.IndexText of title, body and tags; it lists the active and
	// conflict entries.
	CorpusEntries Corpus = iota
	// CorpusEpisodes is episodes_fts (contentless, detail=none): every
	// episode.
	CorpusEpisodes
	// CorpusObserved is CorpusEpisodes without the episodes the host or
	// dshmem injected (episodes.injected = 1: runtime-context snapshots,
	// dshmem's own sections and tool results). The filter is in the
	// probes and lists, not applied after them, so an injected row never
	// takes a place in a caller's candidate budget. Its sizes
	// (CorpusBounds, CorpusSize) are those of every episode: idf is a
	// property of the index.
	CorpusObserved
)

// corpusSQL holds the statements of one Corpus.
type corpusSQL struct {
	// column wraps a MATCH expression for the indexed column.
	column string
	// probe / probeScoped: rowids matching ?1 (MATCH), newest first,
	// at most ?2 (scoped: ?3 is a JSON array of streams).
	probe, probeScoped string
	// all / allScoped: every searchable rowid (small corpora).
	all, allScoped string
	// size / sizeScoped: rows, min rowid, max rowid of the index;
	// bounds: 0, min and max rowid, two b-tree seeks (SQLite optimizes a
	// lone min() or max(), not both in one SELECT).
	size, sizeScoped, bounds string
}

var entriesSQL = &corpusSQL{
	column: "bigrams : (%s)",
	probe: `SELECT rowid FROM entries_fts WHERE entries_fts MATCH ?1
			ORDER BY rowid DESC LIMIT ?2`,
	probeScoped: `SELECT t.rowid FROM entries_fts t JOIN entries x ON x.n = t.rowid
			WHERE entries_fts MATCH ?1 AND x.scope IN (SELECT value FROM json_each(?3))
			ORDER BY t.rowid DESC LIMIT ?2`,
	all:        `SELECT n FROM entries WHERE status IN ('active', 'conflict') ORDER BY n DESC`,
	allScoped:  `SELECT n FROM entries WHERE status IN ('active', 'conflict') AND scope IN (SELECT value FROM json_each(?1)) ORDER BY n DESC`,
	size:       `SELECT count(*), coalesce(min(n), 0), coalesce(max(n), 0) FROM entries`,
	bounds:     `SELECT 0, coalesce((SELECT min(n) FROM entries), 0), coalesce((SELECT max(n) FROM entries), 0)`,
	sizeScoped: `SELECT count(*), coalesce(min(n), 0), coalesce(max(n), 0) FROM entries WHERE scope IN (SELECT value FROM json_each(?1))`,
}

var episodesSQL = &corpusSQL{
	column: "%s",
	probe: `SELECT rowid FROM episodes_fts WHERE episodes_fts MATCH ?1
			ORDER BY rowid DESC LIMIT ?2`,
	probeScoped: `SELECT t.rowid FROM episodes_fts t JOIN events x ON x.n = t.rowid
			WHERE episodes_fts MATCH ?1 AND x.stream IN (SELECT value FROM json_each(?3))
			ORDER BY t.rowid DESC LIMIT ?2`,
	all:        `SELECT n FROM episodes ORDER BY n DESC`,
	allScoped:  `SELECT ep.n FROM episodes ep JOIN events x ON x.n = ep.n WHERE x.stream IN (SELECT value FROM json_each(?1)) ORDER BY ep.n DESC`,
	size:       `SELECT count(*), coalesce(min(n), 0), coalesce(max(n), 0) FROM episodes`,
	bounds:     `SELECT 0, coalesce((SELECT min(n) FROM episodes), 0), coalesce((SELECT max(n) FROM episodes), 0)`,
	sizeScoped: `SELECT count(*), coalesce(min(ep.n), 0), coalesce(max(ep.n), 0) FROM episodes ep JOIN events x ON x.n = ep.n WHERE x.stream IN (SELECT value FROM json_each(?1))`,
}

var observedSQL = func() *corpusSQL {
	s := *episodesSQL
	s.probe = `SELECT t.rowid FROM episodes_fts t JOIN episodes ep ON ep.n = t.rowid
			WHERE episodes_fts MATCH ?1 AND ep.injected = 0
			ORDER BY t.rowid DESC LIMIT ?2`
	s.probeScoped = `SELECT t.rowid FROM episodes_fts t JOIN episodes ep ON ep.n = t.rowid JOIN events x ON x.n = t.rowid
			WHERE episodes_fts MATCH ?1 AND ep.injected = 0 AND x.stream IN (SELECT value FROM json_each(?3))
			ORDER BY t.rowid DESC LIMIT ?2`
	s.all = `SELECT n FROM episodes WHERE injected = 0 ORDER BY n DESC`
	s.allScoped = `SELECT ep.n FROM episodes ep JOIN events x ON x.n = ep.n
			WHERE ep.injected = 0 AND x.stream IN (SELECT value FROM json_each(?1)) ORDER BY ep.n DESC`
	return &s
}()

func (c Corpus) sql() *corpusSQL {
	switch c {
	case CorpusEntries:
		return entriesSQL
	case CorpusEpisodes:
		return episodesSQL
	case CorpusObserved:
		return observedSQL
	}
	panic(fmt.Sprintf("sqlstore: unknown corpus %d", int(c)))
}

// Scopes restricts a corpus query to some streams. The zero value
// searches every stream.
type Scopes struct {
	scoped bool
	list   string // the streams as a JSON array; "null" when not scoped
}

// InScopes restricts a query to streams; nil means every stream (an
// empty, non-nil list matches nothing).
func InScopes(streams []string) Scopes {
	b, _ := json.Marshal(streams) // a []string always marshals
	return Scopes{scoped: streams != nil, list: string(b)}
}

// Key names the restriction in a cache key: equal for equal stream lists.
func (sc Scopes) Key() string {
	if sc.list == "" {
		return "null"
	}
	return sc.list
}

// Probe returns the newest rowids (at most limit) of corpus c whose
// indexed column matches the FTS5 expression expr.
func (s *Store) Probe(ctx context.Context, c Corpus, sc Scopes, expr string, limit int) ([]int64, error) {
	q := c.sql()
	match := fmt.Sprintf(q.column, expr)
	query, args := q.probe, []any{match, limit}
	if sc.scoped {
		query, args = q.probeScoped, []any{match, limit, sc.list}
	}
	return s.rowids(ctx, query, args...)
}

// CorpusRows returns every searchable rowid of corpus c, newest first:
// for corpora small enough to score whole.
func (s *Store) CorpusRows(ctx context.Context, c Corpus, sc Scopes) ([]int64, error) {
	q := c.sql()
	if sc.scoped {
		return s.rowids(ctx, q.allScoped, sc.list)
	}
	return s.rowids(ctx, q.all)
}

func (s *Store) rowids(ctx context.Context, query string, args ...any) ([]int64, error) {
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// Extent is the size of a corpus: its rows and the span of their rowids.
type Extent struct {
	Rows       int64
	MinN, MaxN int64
}

// CorpusBounds returns the rowid span of corpus c, two b-tree seeks;
// Rows is 0 (counting is a scan: CorpusSize).
func (s *Store) CorpusBounds(ctx context.Context, c Corpus) (Extent, error) {
	var e Extent
	err := s.queryRow(ctx, c.sql().bounds).Scan(&e.Rows, &e.MinN, &e.MaxN)
	return e, err
}

// CorpusSize counts the rows of corpus c within sc, and their rowid
// span. Counting scans the rows (episodes run to millions).
func (s *Store) CorpusSize(ctx context.Context, c Corpus, sc Scopes) (Extent, error) {
	q := c.sql()
	query, args := q.size, []any{}
	if sc.scoped {
		query, args = q.sizeScoped, []any{sc.list}
	}
	var e Extent
	err := s.queryRow(ctx, query, args...).Scan(&e.Rows, &e.MinN, &e.MaxN)
	return e, err
}

// EntryCandidate is an entry of CorpusEntries as recall scores it.
type EntryCandidate struct {
	N                      int64 // entries.n
	ID, Scope, Type, Title string
	Description, Terms     string
	Content                string
	Tags                   string // the column: a JSON array
	Importance             int
	Confidence             float64
	Status, UpdatedAt      string
}

// EpisodeCandidate is an episode as recall scores it: its event and its
// searchable text (what projector.EpisodeText gives, computed in SQL).
type EpisodeCandidate struct {
	N               int64 // events.n
	EventID, Stream string
	Seq             uint64
	Type, Session   string
	Time            string
	Injected        bool
	Text            string
}

const fetchEntriesSQL = `SELECT e.n, e.id, e.scope, e.type, e.title, e.description, e.terms, e.content, e.tags,
			e.importance, e.confidence, e.status, e.updated_at
			FROM json_each(?1) j JOIN entries e ON e.n = j.value
			WHERE e.status IN ('active', 'conflict')`

const fetchEpisodesSQL = `SELECT e.n, e.id, e.stream, e.seq, e.type, e.session, e.time, ep.injected,
			CASE e.type
				WHEN 'task/end' THEN trim(coalesce(e.data ->> 'request', '') || char(10) ||
				                          coalesce(e.data ->> 'result', ''), char(10))
				ELSE coalesce(e.data ->> 'text', '')
			END
			FROM json_each(?1) j JOIN events e ON e.n = j.value JOIN episodes ep ON ep.n = e.n`

// FetchEntries reads the active and conflict entries among the rowids
// ids, in any order.
func (s *Store) FetchEntries(ctx context.Context, ids []int64) ([]EntryCandidate, error) {
	arr, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := s.query(ctx, fetchEntriesSQL, string(arr))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []EntryCandidate
	for rows.Next() {
		var c EntryCandidate
		if err := rows.Scan(&c.N, &c.ID, &c.Scope, &c.Type, &c.Title, &c.Description, &c.Terms,
			&c.Content, &c.Tags, &c.Importance, &c.Confidence, &c.Status, &c.UpdatedAt); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// FetchEpisodes reads the episodes among the rowids ids, in any order.
func (s *Store) FetchEpisodes(ctx context.Context, ids []int64) ([]EpisodeCandidate, error) {
	arr, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := s.query(ctx, fetchEpisodesSQL, string(arr))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []EpisodeCandidate
	for rows.Next() {
		var c EpisodeCandidate
		var seq int64
		if err := rows.Scan(&c.N, &c.EventID, &c.Stream, &seq, &c.Type, &c.Session, &c.Time, &c.Injected, &c.Text); err != nil {
			return nil, err
		}
		c.Seq = uint64(seq)
		out = append(out, c)
	}
	return out, rows.Err()
}

// ShownCounts returns how often each entry was shown in session
// (memory/shown events, folded into the shown table).
func (s *Store) ShownCounts(ctx context.Context, session string) (map[string]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT entry_id, sum(count) FROM shown WHERE session = ? GROUP BY entry_id`, session)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		out[id] = n
	}
	return out, rows.Err()
}

// stmtCache holds a Store's prepared corpus statements by query text.
// Recall runs a few fixed queries many times, and preparing one (parsing
// and planning) costs about as much as running a probe; a prepared
// statement is reused on each pooled connection it was prepared on.
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// stmtCaches maps a weak *Store to its stmtCache, so that the cache does
// not keep a Store alive; a cleanup closes the statements once the Store
// is unreachable (after Close they fail like any query on a closed pool).
var stmtCaches sync.Map // weak.Pointer[Store] → *stmtCache

func (s *Store) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	key := weak.Make(s)
	v, ok := stmtCaches.Load(key)
	if !ok {
		v, ok = stmtCaches.LoadOrStore(key, &stmtCache{m: map[string]*sql.Stmt{}})
		if !ok {
			runtime.AddCleanup(s, func(key weak.Pointer[Store]) {
				if v, ok := stmtCaches.LoadAndDelete(key); ok {
					for _, st := range v.(*stmtCache).m {
						st.Close()
					}
				}
			}, key)
		}
	}
	c := v.(*stmtCache)
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.m[query]; st != nil {
		return st, nil
	}
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.m[query] = st
	return st, nil
}

// query runs a corpus statement, prepared once per Store.
func (s *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// queryRow is query for one row.
func (s *Store) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := s.stmt(ctx, query)
	if err != nil {
		// A failed prepare surfaces from Scan, as QueryRowContext's would.
		return s.db.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}
