package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"weak"
)

// A source is one full-text index recall ranks: entries (entries_fts,
// whose bigrams column holds tokenize.IndexText of title, body and tags)
// or episodes (episodes_fts, contentless, detail=none). Every query here
// is bounded: probes read at most a LIMIT of rowids newest first (FTS5
// walks a doclist backwards without sorting), fetches read the rows of a
// bounded pool by rowid.
type source struct {
	kind string
	// name keys the caches of term rarity: sources over the same index
	// that list different rows (episodes with or without injected ones)
	// see different document frequencies.
	name string
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
	// cacheSize: counting is a scan (episodes run to millions); cache it.
	cacheSize bool
	// fetch: the rows of a JSON array of rowids.
	fetch string
}

var sources = map[string]*source{
	KindSemantic: {
		kind:   KindSemantic,
		name:   KindSemantic,
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
		fetch: `SELECT e.n, e.id, e.scope, e.type, e.title, e.description, e.terms, e.content, e.tags,
			e.importance, e.status, e.updated_at
			FROM json_each(?1) j JOIN entries e ON e.n = j.value
			WHERE e.status IN ('active', 'conflict')`,
	},
	KindEpisodic: {
		kind:   KindEpisodic,
		name:   KindEpisodic,
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
		cacheSize:  true,
		fetch: `SELECT e.n, e.id, e.stream, e.seq, e.type, e.session, e.time, ep.injected,
			CASE e.type
				WHEN 'task/end' THEN trim(coalesce(e.data ->> 'request', '') || char(10) ||
				                          coalesce(e.data ->> 'result', ''), char(10))
				ELSE coalesce(e.data ->> 'text', '')
			END
			FROM json_each(?1) j JOIN events e ON e.n = j.value JOIN episodes ep ON ep.n = e.n`,
	},
}

// observedEpisodes is the episodic source without the episodes the host
// or dshmem injected (episodes.injected = 1: runtime-context snapshots,
// dshmem's own sections and tool results), which search and recall leave
// out unless RecallQuery.IncludeInjected asks for them. The filter is in
// the probes and lists, not applied after them, so an injected row never
// takes a place in the candidate budget (PerTermCap, PoolCap). Corpus
// sizes are those of every episode: idf is a property of the index.
var observedEpisodes = func() *source {
	s := *sources[KindEpisodic]
	s.name = KindEpisodic + "-observed"
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

// probe returns the newest rowids (at most limit) matching expr.
func (s *Store) probe(ctx context.Context, src *source, scoped bool, scopes, expr string, limit int) ([]int64, error) {
	match := fmt.Sprintf(src.column, expr)
	query, args := src.probe, []any{match, limit}
	if scoped {
		query, args = src.probeScoped, []any{match, limit, scopes}
	}
	return s.rowids(ctx, query, args...)
}

// allRows returns every searchable rowid of a small corpus.
func (s *Store) allRows(ctx context.Context, src *source, scoped bool, scopes string) ([]int64, error) {
	if scoped {
		return s.rowids(ctx, src.allScoped, scopes)
	}
	return s.rowids(ctx, src.all)
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

// corpus is the size of an index as recall sees it.
type corpus struct {
	rows       int64
	minN, maxN int64
}

// sizeCache keeps the row counts of large indexes per database file and
// scope set, with the max rowid they were counted at. A count is reused
// (grown by the rows added since, at the same density) until the index
// has grown by a tenth.
var sizeCache sync.Map // string → corpus

func (s *Store) corpusStats(ctx context.Context, src *source, scoped bool, scopes string) (corpus, error) {
	// min and max of an INTEGER PRIMARY KEY are two b-tree seeks.
	var bounds corpus
	if err := s.queryRow(ctx, src.bounds).Scan(&bounds.rows, &bounds.minN, &bounds.maxN); err != nil {
		return corpus{}, err
	}
	key := s.path + "\x00" + src.kind + "\x00" + scopes
	if src.cacheSize {
		if v, ok := sizeCache.Load(key); ok {
			old := v.(corpus)
			grown := bounds.maxN - old.maxN
			if old.maxN > 0 && grown >= 0 && float64(grown) <= 0.1*float64(old.maxN-old.minN+1) {
				density := float64(old.rows) / float64(old.maxN-old.minN+1)
				bounds.rows = old.rows + int64(density*float64(grown))
				return bounds, nil
			}
		}
	}
	query, args := src.size, []any{}
	if scoped {
		query, args = src.sizeScoped, []any{scopes}
	}
	var c corpus
	if err := s.queryRow(ctx, query, args...).Scan(&c.rows, &c.minN, &c.maxN); err != nil {
		return corpus{}, err
	}
	// Rowid bounds stay those of the whole index: a scoped probe's
	// density is measured against them (see Recall's probe stage).
	bounds.rows = c.rows
	if src.cacheSize {
		sizeCache.Store(key, bounds)
	}
	return bounds, nil
}

// candidate is a fetched row: its item, and the fields scored beyond the
// title.
type candidate struct {
	item              Item
	body, tags, terms string
}

// fetch reads the rows of rowids (in any order: scoring sorts).
func (s *Store) fetch(ctx context.Context, src *source, ids []int64) ([]candidate, error) {
	arr, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := s.query(ctx, src.fetch, string(arr))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []candidate
	for rows.Next() {
		var c candidate
		var n int64
		if src.kind == KindSemantic {
			var desc, tags string
			if err := rows.Scan(&n, &c.item.ID, &c.item.Scope, &c.item.EntryType, &c.item.Title, &desc, &c.terms,
				&c.item.Text, &tags, &c.item.Importance, &c.item.Status, &c.item.UpdatedAt); err != nil {
				return nil, err
			}
			var tl []string
			_ = json.Unmarshal([]byte(tags), &tl)
			c.tags = strings.Join(tl, "\n")
			c.body = joinLines(desc, c.item.Text)
			c.item.Kind = KindSemantic
		} else {
			ep := &Episode{}
			var seq int64
			if err := rows.Scan(&n, &ep.EventID, &ep.Stream, &seq, &ep.Type, &ep.Session, &ep.Time, &ep.Injected, &c.item.Text); err != nil {
				return nil, err
			}
			ep.Seq = uint64(seq)
			c.item.Episode = ep
			c.item.ID, c.item.Scope, c.item.Kind, c.item.Status = ep.EventID, ep.Stream, KindEpisodic, "observed"
			c.body = c.item.Text
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

func joinLines(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "\n" + b
}

// shownCounts returns how often each entry was shown in session.
func (s *Store) shownCounts(ctx context.Context, session string) (map[string]int, error) {
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

// stmtCache holds a Store's prepared recall statements by query text.
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

// query runs a recall statement, prepared once per Store.
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

// commonTerms remembers the document frequency of terms held by more than
// Weights.CommonFraction of a large index (per database file, source and
// scope set). Such a term's postings are never enumerated, so its probe
// only measures its rarity; queries repeat these words ("the", "fix",
// single letters of identifiers), and each probe of one walks a long
// doclist (scoped, joining every row to its scope). A remembered df is
// scaled with the index, and forgotten once the index has grown by a
// tenth, the rule of sizeCache.
var commonTerms = &dfCache{m: map[commonKey]commonDF{}}

// maxCommonTerms bounds commonTerms; it is emptied when full.
const maxCommonTerms = 4096

type commonKey struct{ path, kind, scopes, term string }

type commonDF struct {
	df         float64
	minN, maxN int64
}

type dfCache struct {
	mu sync.Mutex
	m  map[commonKey]commonDF
}

// get returns the remembered df of key scaled to the index c, if any.
func (d *dfCache) get(key commonKey, c corpus) (float64, bool) {
	d.mu.Lock()
	e, ok := d.m[key]
	d.mu.Unlock()
	if !ok || e.minN != c.minN {
		return 0, false
	}
	span := float64(e.maxN - e.minN + 1)
	grown := c.maxN - e.maxN
	if grown < 0 || float64(grown) > 0.1*span {
		return 0, false
	}
	return min(e.df*float64(c.maxN-c.minN+1)/span, float64(c.rows)), true
}

// put remembers df as measured on the index c.
func (d *dfCache) put(key commonKey, df float64, c corpus) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.m) >= maxCommonTerms {
		clear(d.m)
	}
	d.m[key] = commonDF{df: df, minN: c.minN, maxN: c.maxN}
}
