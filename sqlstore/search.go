package sqlstore

import (
	"context"
	"fmt"

	"dshmem/sqlstore/tokenize"
)

// SearchQuery asks for episodes matching Text.
type SearchQuery struct {
	Text   string
	Stream string // "" searches every stream
	Limit  int    // ≤ 0 means DefaultSearchLimit
	All    bool   // require every term (tokenize.All) instead of any (tokenize.Any)
}

// DefaultSearchLimit is the number of hits Search returns when the query
// sets no limit.
const DefaultSearchLimit = 20

// maxSearchLimit caps a query's limit: the cost of the bm25 sort grows
// with the rows matched, the cost of the join with the rows returned.
const maxSearchLimit = 1000

// Hit is one episode that matched a search.
type Hit struct {
	EventID  string  `json:"eventId"`
	Stream   string  `json:"stream"`
	Seq      uint64  `json:"seq"`
	Type     string  `json:"type"`
	Session  string  `json:"session"`
	Time     string  `json:"time"`
	Text     string  `json:"text"`
	Injected bool    `json:"injected"`
	Score    float64 `json:"score"` // -bm25: higher is better
}

// searchSQL picks the best rowids in the FTS table alone, then joins the
// few winners to events (STACK-NOTES: ORDER BY bm25() in a subquery is
// cheaper than ORDER BY rank, and far cheaper than sorting joined rows).
// Ties are broken by (stream, seq) so the order never depends on rowids.
const searchSQL = `
SELECT e.id, e.stream, e.seq, e.type, e.session, e.time, ep.injected,
       CASE e.type
           WHEN 'task/end' THEN trim(coalesce(e.data ->> 'request', '') || char(10) ||
                                     coalesce(e.data ->> 'result', ''), char(10))
           ELSE coalesce(e.data ->> 'text', '')
       END,
       -f.score
FROM (SELECT rowid AS n, bm25(episodes_fts) AS score
      FROM episodes_fts WHERE episodes_fts MATCH ?
      ORDER BY score LIMIT ?) f
JOIN events e ON e.n = f.n
JOIN episodes ep ON ep.n = f.n
ORDER BY f.score, e.stream, e.seq`

// searchStreamSQL restricts the candidates to one stream before the
// sort; the join costs one rowid lookup per matching row.
const searchStreamSQL = `
SELECT e.id, e.stream, e.seq, e.type, e.session, e.time, ep.injected,
       CASE e.type
           WHEN 'task/end' THEN trim(coalesce(e.data ->> 'request', '') || char(10) ||
                                     coalesce(e.data ->> 'result', ''), char(10))
           ELSE coalesce(e.data ->> 'text', '')
       END,
       -f.score
FROM (SELECT t.rowid AS n, bm25(episodes_fts) AS score
      FROM episodes_fts t JOIN events x ON x.n = t.rowid
      WHERE episodes_fts MATCH ? AND x.stream = ?
      ORDER BY score LIMIT ?) f
JOIN events e ON e.n = f.n
JOIN episodes ep ON ep.n = f.n
ORDER BY f.score, e.stream, e.seq`

// Search finds episodes whose text matches q.Text: user and assistant
// messages, tool results, compaction summaries and task ends, including
// text the host injected (Hit.Injected says so). Terms are CJK bigrams and
// word parts (package tokenize), so a two-character Chinese word inside a
// longer run, or one part of a camelCase identifier, is found. A query
// without any term returns no hits. Ranking is bm25 only; recall adds
// structure on top.
func (s *Store) Search(ctx context.Context, q SearchQuery) ([]Hit, error) {
	mode := tokenize.Any
	if q.All {
		mode = tokenize.All
	}
	match := tokenize.MatchQuery(q.Text, mode)
	if match == "" {
		return nil, nil
	}
	limit := q.Limit
	switch {
	case limit <= 0:
		limit = DefaultSearchLimit
	case limit > maxSearchLimit:
		limit = maxSearchLimit
	}
	query, args := searchSQL, []any{match, limit}
	if q.Stream != "" {
		query, args = searchStreamSQL, []any{match, q.Stream, limit}
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", q.Text, err)
	}
	defer rows.Close()
	var hits []Hit
	for rows.Next() {
		var h Hit
		var seq int64
		if err := rows.Scan(&h.EventID, &h.Stream, &seq, &h.Type, &h.Session, &h.Time, &h.Injected, &h.Text, &h.Score); err != nil {
			return nil, fmt.Errorf("search %q: %w", q.Text, err)
		}
		h.Seq = uint64(seq)
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search %q: %w", q.Text, err)
	}
	return hits, nil
}
