package recall

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"sync"

	"dshmem/sqlstore"
	"dshmem/sqlstore/tokenize"
)

// A source is one corpus of the index that recall ranks (sqlstore runs
// its queries, see sqlstore.Corpus), with what this package caches about
// it.
type source struct {
	kind string
	// name keys the caches of term rarity: sources over the same index
	// that list different rows (episodes with or without injected ones)
	// see different document frequencies.
	name   string
	corpus sqlstore.Corpus
	// cacheSize: counting is a scan (episodes run to millions); cache it.
	cacheSize bool
}

var sources = map[string]*source{
	KindSemantic: {kind: KindSemantic, name: KindSemantic, corpus: sqlstore.CorpusEntries},
	KindEpisodic: {kind: KindEpisodic, name: KindEpisodic, corpus: sqlstore.CorpusEpisodes, cacheSize: true},
}

// observedEpisodes is the episodic source without the episodes the host
// or dshmem injected (sqlstore.CorpusObserved), which search and recall
// leave out unless Query.IncludeInjected asks for them. The filter is in
// the probes and lists, so an injected row never takes a place in the
// candidate budget (PerTermCap, PoolCap). Its sizes are those of every
// episode (the size cache is keyed by kind): idf is a property of the
// index.
var observedEpisodes = &source{kind: KindEpisodic, name: KindEpisodic + "-observed", corpus: sqlstore.CorpusObserved, cacheSize: true}

// scored is one ranked candidate before the cut.
type scored struct {
	item     Item
	f        features
	lexical  float64
	score    float64
	conflict bool
	n        int64   // the corpus rowid
	dense    float64 // the normalised dense score (fuse.go), 0 without one
}

// rank runs the stages of one source: probe the query terms (rarity and
// candidates at once), select the salient ones, gather candidates, fetch
// them, score them. On the deadline it returns what it scored, with
// errDeadline.
func (r *call) rank(src *source, text string) ([]scored, error) {
	a := analyzeQuery(text, r.w)
	if len(a.terms) == 0 {
		return nil, nil
	}
	scopes := sqlstore.InScopes(r.q.Scopes)
	st, err := corpusStats(r.ctx, r.s, src, scopes)
	if err != nil {
		return nil, r.wrap("read index size", err)
	}
	if st.Rows == 0 {
		return nil, nil
	}
	small := st.Rows <= int64(r.w.SmallCorpus)

	// Stage 1: probe. One bounded FTS5 query per term gives the newest
	// rowids holding it and, from how far back the cap reached, its
	// document frequency.
	postings := map[*qterm][]int64{}
	probe := func(qt *qterm) error {
		ids, err := r.s.Probe(r.ctx, src.corpus, scopes, tokenize.Quote(qt.term), r.w.PerTermCap)
		if err != nil {
			return r.wrap("look up "+qt.term, err)
		}
		qt.probed = true
		qt.df, qt.exactDF = float64(len(ids)), len(ids) < r.w.PerTermCap
		if !qt.exactDF && len(ids) > 0 {
			// The cap was hit: the newest PerTermCap postings span rowids
			// [last, maxN]; assume the term is as dense across the whole
			// index.
			span := float64(st.MaxN - ids[len(ids)-1] + 1)
			qt.df = min(float64(len(ids))*float64(st.MaxN-st.MinN+1)/max(span, 1), float64(st.Rows))
		}
		postings[qt] = ids
		return nil
	}
	common := r.w.CommonFraction * float64(st.Rows)
	for _, qt := range a.probeOrder(r.w) {
		if r.expired("looking up query terms") {
			break
		}
		key := commonKey{path: r.s.Path(), kind: src.name, scopes: scopes.Key(), term: qt.term}
		if !small {
			if df, ok := commonTerms.get(key, st); ok && df > common {
				// Too common to enumerate: only its rarity is needed,
				// and the index told it lately.
				qt.probed, qt.df = true, df
				continue
			}
		}
		if err := probe(qt); err != nil {
			return nil, err
		}
		if !small && qt.df > common {
			commonTerms.put(key, qt.df, st)
		}
	}
	a.selectTerms(float64(st.Rows), r.w)
	for _, qt := range a.sel {
		r.res.Terms = appendUnique(r.res.Terms, qt.term)
	}
	if len(a.sel) == 0 {
		return nil, nil
	}

	// Stage 2: candidates. Rare terms lead; stopword-like terms are
	// never enumerated.
	var pool []int64
	seen := map[int64]bool{}
	add := func(ids []int64) {
		for _, id := range ids {
			if len(pool) >= r.w.PoolCap && !small {
				return
			}
			if !seen[id] {
				seen[id] = true
				pool = append(pool, id)
			}
		}
	}
	if small {
		ids, err := r.s.CorpusRows(r.ctx, src.corpus, scopes)
		if err != nil {
			return nil, r.wrap("list rows", err)
		}
		add(ids)
	} else {
		rare := make([]*qterm, 0, len(a.sel))
		for _, qt := range a.sel {
			if qt.df > 0 && qt.df <= r.w.CommonFraction*float64(st.Rows) {
				rare = append(rare, qt)
			}
		}
		sort.SliceStable(rare, func(i, j int) bool { return rare[i].df < rare[j].df })
		if len(rare) == 0 {
			// Only common words: the least common one's newest postings.
			least := a.sel[0]
			for _, qt := range a.sel {
				if qt.df > 0 && qt.df < least.df {
					least = qt
				}
			}
			rare = []*qterm{least}
			if _, ok := postings[least]; !ok && !r.expired("gathering candidates") {
				if err := probe(least); err != nil {
					return nil, err
				}
			}
		}
		var together []int64 // rows known to hold rare[:k] all
		k := 0
		if len(rare) >= 2 && !r.expired("gathering candidates") {
			// Rows holding the rarest terms together first.
			k = min(len(rare), 3)
			lists := make([][]int64, k)
			complete := true
			for i := range k {
				lists[i] = postings[rare[i]]
				complete = complete && rare[i].exactDF
			}
			if complete {
				// Every posting of each is known: intersect them here
				// rather than ask the index.
				together = intersect(lists, r.w.PoolCap)
			} else {
				parts := make([]string, k)
				for i := range k {
					parts[i] = tokenize.Quote(rare[i].term)
				}
				ids, err := r.s.Probe(r.ctx, src.corpus, scopes, strings.Join(parts, " AND "), r.w.PoolCap)
				if err != nil {
					return nil, r.wrap("gather candidates", err)
				}
				together = ids
			}
			add(together)
		}
		for _, qt := range rare {
			add(postings[qt])
		}
		if len(pool) > r.w.FetchCap {
			pool = preRank(pool, a.sel, postings, together, rare[:k], r.w.FetchCap)
		}
	}
	// The nearest vectors of the scopes join the pool (fuse.go): what the
	// words missed and the meaning did not.
	dense, err := r.nearest(src, text)
	if err != nil {
		return nil, r.wrap("find the nearest vectors", err)
	}
	for _, h := range dense {
		if !seen[h.N] {
			seen[h.N] = true
			pool = append(pool, h.N)
		}
	}
	if r.expired("gathering candidates") && len(pool) == 0 {
		return nil, errDeadline
	}

	// Stage 3: fetch and tokenize, in chunks, watching the clock.
	if r.q.Session != "" && src.kind == KindSemantic && r.shown == nil {
		if r.shown, err = r.s.ShownCounts(r.ctx, r.q.Session); err != nil {
			return nil, r.wrap("read shown entries", err)
		}
	}
	var items []Item
	var docs []*doc
	var rowids []int64
	const chunk = 128
	for off := 0; off < len(pool); off += chunk {
		if off > 0 && r.expired("reading candidates") {
			break
		}
		got, err := fetch(r.ctx, r.s, src, pool[off:min(off+chunk, len(pool))])
		if err != nil {
			if len(items) > 0 && r.ctx.Err() != nil {
				r.expired("reading candidates")
				break
			}
			return nil, r.wrap("read candidates", err)
		}
		for _, c := range got {
			if c.item.Kind == KindSemantic {
				c.item.Flags = r.entryFlags(c.item.Status, c.item.UpdatedAt, nil)
			} else {
				c.item.Flags = []string{}
				if c.item.Episode.Injected {
					c.item.Flags = append(c.item.Flags, FlagInjected)
				}
			}
			items = append(items, c.item)
			docs = append(docs, a.newDoc(c.item.Title, c.body, c.tags, c.terms))
			rowids = append(rowids, c.n)
		}
	}
	r.res.Candidates += len(docs)

	// Stage 4: score (Go only, bounded by the pool).
	a.finishIDF(docs, r.w)
	var sumDL, sumCL, sumWL float64
	for _, d := range docs {
		sumDL += float64(d.dl)
		sumCL += float64(d.cl)
		sumWL += float64(d.wl)
	}
	avgdl := sumDL / float64(max(len(docs), 1))
	avgcl := sumCL / float64(max(len(docs), 1))
	avgwl := sumWL / float64(max(len(docs), 1))
	fs := make([]features, len(docs))
	for i, d := range docs {
		fs[i] = a.score(d, avgdl, avgcl, avgwl, r.w)
	}
	out := make([]scored, 0, len(docs))
	near := make(map[int64]bool, len(dense))
	for _, h := range dense {
		near[h.N] = true
	}
	for i := range docs {
		f := fs[i]
		if f.Coverage <= 0 && f.Substring == 0 && !near[rowids[i]] {
			continue
		}
		sc := scored{item: items[i], f: f, lexical: f.lexical(r.w), n: rowids[i]}
		sc.score = sc.lexical * r.prior(&sc.item)
		sc.item.Score = round4(sc.score)
		sc.conflict = sc.item.Status == "conflict"
		out = append(out, sc)
	}
	out = r.fuse(out, dense)
	if r.res.Partial {
		return out, errDeadline
	}
	return out, nil
}

// preRank keeps the keep candidates of pool that hold the most query
// mass (Σ qw·idf) as far as the postings already read tell: a row is
// known to hold a term when it is among the term's probed postings, or
// among the rows found holding the rarest terms together. Ties keep pool
// order (rarest terms first, newest first). It costs no database work:
// fetching and tokenizing are most of a query's time, and a row that
// holds none of the rare terms the others hold rarely wins.
func preRank(pool []int64, sel []*qterm, postings map[*qterm][]int64, together []int64, togetherTerms []*qterm, keep int) []int64 {
	known := make(map[int64]float64, len(pool))
	for _, id := range pool {
		known[id] = 0
	}
	held := make(map[int64]bool, len(together))
	for _, id := range together {
		held[id] = true
	}
	for _, qt := range sel {
		m := qt.qw * qt.idf
		if slices.Contains(togetherTerms, qt) {
			for id := range held {
				if _, ok := known[id]; ok {
					known[id] += m
				}
			}
		}
		for _, id := range postings[qt] {
			if _, ok := known[id]; ok && !(held[id] && slices.Contains(togetherTerms, qt)) {
				known[id] += m
			}
		}
	}
	out := slices.Clone(pool)
	sort.SliceStable(out, func(i, j int) bool { return known[out[i]] > known[out[j]] })
	return out[:keep]
}

// intersect returns the rowids in every list, in the order of the first
// (newest first, as probes return them), at most limit.
func intersect(lists [][]int64, limit int) []int64 {
	count := make(map[int64]int, len(lists[0]))
	for _, id := range lists[0] {
		count[id] = 1
	}
	for i, l := range lists[1:] {
		for _, id := range l {
			if count[id] == i+1 {
				count[id] = i + 2
			}
		}
	}
	var out []int64
	for _, id := range lists[0] {
		if count[id] == len(lists) && len(out) < limit {
			out = append(out, id)
		}
	}
	return out
}

// sizeCache keeps the row counts of large indexes per database file and
// scope set, with the max rowid they were counted at. A count is reused
// (grown by the rows added since, at the same density) until the index
// has grown by a tenth.
var sizeCache sync.Map // string → sqlstore.Extent

// corpusStats returns the size of src within scopes: its rows, and the
// rowid bounds of the whole index (a scoped probe's density is measured
// against them, see rank's probe stage).
func corpusStats(ctx context.Context, s *sqlstore.Store, src *source, scopes sqlstore.Scopes) (sqlstore.Extent, error) {
	// min and max of an INTEGER PRIMARY KEY are two b-tree seeks.
	bounds, err := s.CorpusBounds(ctx, src.corpus)
	if err != nil {
		return sqlstore.Extent{}, err
	}
	key := s.Path() + "\x00" + src.kind + "\x00" + scopes.Key()
	if src.cacheSize {
		if v, ok := sizeCache.Load(key); ok {
			old := v.(sqlstore.Extent)
			grown := bounds.MaxN - old.MaxN
			if old.MaxN > 0 && grown >= 0 && float64(grown) <= 0.1*float64(old.MaxN-old.MinN+1) {
				density := float64(old.Rows) / float64(old.MaxN-old.MinN+1)
				bounds.Rows = old.Rows + int64(density*float64(grown))
				return bounds, nil
			}
		}
	}
	c, err := s.CorpusSize(ctx, src.corpus, scopes)
	if err != nil {
		return sqlstore.Extent{}, err
	}
	bounds.Rows = c.Rows
	if src.cacheSize {
		sizeCache.Store(key, bounds)
	}
	return bounds, nil
}

// candidate is a fetched row: its item, and the fields scored beyond the
// title.
type candidate struct {
	item              Item
	n                 int64 // the corpus rowid
	body, tags, terms string
}

// fetch reads the rows of rowids (in any order: scoring sorts).
func fetch(ctx context.Context, s *sqlstore.Store, src *source, ids []int64) ([]candidate, error) {
	if src.kind == KindSemantic {
		es, err := s.FetchEntries(ctx, ids)
		if err != nil {
			return nil, err
		}
		out := make([]candidate, 0, len(es))
		for i := range es {
			e := &es[i]
			var tl []string
			_ = json.Unmarshal([]byte(e.Tags), &tl)
			out = append(out, candidate{
				n: e.N,
				item: Item{ID: e.ID, Kind: KindSemantic, Scope: e.Scope, Title: e.Title, Text: e.Content,
					Status: e.Status, EntryType: e.Type, Importance: e.Importance, UpdatedAt: e.UpdatedAt, Confidence: e.Confidence},
				body:  joinLines(e.Description, e.Content),
				tags:  strings.Join(tl, "\n"),
				terms: e.Terms,
			})
		}
		return out, nil
	}
	eps, err := s.FetchEpisodes(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]candidate, 0, len(eps))
	for i := range eps {
		e := &eps[i]
		ep := &Episode{EventID: e.EventID, Stream: e.Stream, Seq: e.Seq, Type: e.Type, Session: e.Session, Time: e.Time, Injected: e.Injected}
		out = append(out, candidate{
			n:    e.N,
			item: Item{Episode: ep, ID: ep.EventID, Kind: KindEpisodic, Scope: ep.Stream, Text: e.Text, Status: "observed"},
			body: e.Text,
		})
	}
	return out, nil
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
func (d *dfCache) get(key commonKey, c sqlstore.Extent) (float64, bool) {
	d.mu.Lock()
	e, ok := d.m[key]
	d.mu.Unlock()
	if !ok || e.minN != c.MinN {
		return 0, false
	}
	span := float64(e.maxN - e.minN + 1)
	grown := c.MaxN - e.maxN
	if grown < 0 || float64(grown) > 0.1*span {
		return 0, false
	}
	return min(e.df*float64(c.MaxN-c.MinN+1)/span, float64(c.Rows)), true
}

// put remembers df as measured on the index c.
func (d *dfCache) put(key commonKey, df float64, c sqlstore.Extent) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.m) >= maxCommonTerms {
		clear(d.m)
	}
	d.m[key] = commonDF{df: df, minN: c.MinN, maxN: c.MaxN}
}
