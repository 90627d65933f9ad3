package sqlstore

// Recall, and search built on it, in four bounded stages:
//
//  1. Read the query (rank.go): lines weighted by recency (a dialogue's
//     last turns lead), distinct tokens with saturating query weights,
//     adjacent pairs, and for short queries the phrase and normalized
//     text.
//  2. Probe: for the most salient tokens (at most MaxProbeTerms), one
//     FTS5 query each, `MATCH "t" ORDER BY rowid DESC LIMIT PerTermCap`.
//     It costs O(PerTermCap), never O(df) (FTS5 walks the doclist from
//     its end), and gives both the newest postings and the term's
//     document frequency: exact below the cap, else extrapolated from
//     the rowid span the cap covered. Salient terms are then the top
//     MaxQueryTerms by qw·idf.
//  3. Candidates: a corpus of at most SmallCorpus rows is scored whole;
//     otherwise rows holding the rarest terms together (one AND query),
//     then each non-common term's newest postings, rarest first, until
//     PoolCap. Terms held by more than CommonFraction of the rows are
//     never enumerated. Of a larger pool only FetchCap rows are read:
//     those the postings already read show holding the most query mass
//     (preRank). Rows are fetched by rowid in chunks and tokenized with
//     one reused tokenize.Scanner (no allocation per token).
//  4. Score in Go (Weights), apply priors, floors and the conflict rule,
//     cut by count and bytes.
//
// The clock is read between stages and between chunks; the context
// carries the same deadline into SQLite (modernc interrupts a running
// statement when it expires), so an expired recall returns what it has
// with a note, never an error.
//
// MADial-Bench (dshmem eval madial), what each step gave (zh / en R@10):
// summed idf of shared terms (madial.Lexical) 0.604 / 0.459; first
// version of this ranker (line decay 0.8) 0.598 / 0.519; line decay 0.5
// 0.645 / 0.515; single Chinese characters as a BM25 feature 0.660 /
// 0.515. Flat within ±0.01: k1, b, coverage, pairs, title, tags, stems,
// term caps, recency. Pseudo-relevance feedback (the top 3 documents'
// 20 best other terms as a second query) raised zh R@20 to 0.79 but not
// R@10 and hurt en; it was removed. Background
// rarity from a general word-frequency table (zhdict, from jieba's
// dictionary), each alone (zh R@10; en unchanged): char idf × info^3
// 0.690, term idf × info^2 0.664, non-word bigrams × 0.5 0.677, BM25 over
// dictionary words × 2 with word idf × info 0.675; together 0.688 (R@1
// 0.295 → 0.363, R@20 0.794). Pangu synonym expansion of query words:
// no change (±0.002). Scaling lines of speakers other than the last
// line's by 0.5: en 0.533 but zh 0.670; it was removed.
// The same background rarity for English words from spoken-English
// counts (enfreq, Weights.EnglishBg), en R@10 by exponent: 0.5 0.588,
// 1 0.607, 2 0.651, 3 0.659, 4 0.666 (R@1 0.234 → 0.314 at 2); zh 0.691
// (names and English words in its dialogues). 2 is kept, as for Chinese
// bigrams: the steeper ones differ by noise. Unknown words counted as
// the rarest rather than left alone: ±0.003.
//
// Tried and not adopted (zh / en R@10 against 0.688 / 0.530): related
// words bridged through shared CC-CEDICT glosses, as query or document
// expansion, 0.690-0.706 zh (the best +0.018, about 3 of 160 cases, not
// stacking, a 2.8 MB share-alike table and +53 MB); WordNet synonyms and
// hypernyms, en ±0.02 with R@5 down 0.01; WordNet supersense classes
// (pizza ~ picnic through noun.food), zh R@20 0.83 but R@10 flat. The
// misses left are memories related by situation, not by words (how to
// celebrate → the ice cream shop); dictionaries do not hold those.
//
// A sentence encoder (sqlstore/encoder, English only) reaches them on
// MADial en: alone R@10 0.650, fused with this ranking by FuseDense
// (fuse.go; the blend weights tried are in weights.go, DenseBlend)
// 0.751, R@5 0.529 → 0.625, R@1 unchanged; zh untouched.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"dshmem/markdown"
	"dshmem/sqlstore/tokenize"
)

// Kinds of memory a recall or search ranks.
const (
	KindSemantic  = "semantic"  // entries (ARCHITECTURE §5)
	KindEpisodic  = "episodic"  // observed messages
	KindAll       = "all"       // both, ranked together
	KindKnowledge = "knowledge" // a knowledge file named by the query
)

// Recall defaults (issue 4).
const (
	DefaultRecallLimit   = 8
	DefaultRecallBytes   = 5000
	DefaultRecallTimeout = 250 * time.Millisecond
)

// RecallQuery asks for the memories that match Text. The zero value of
// every field but Text works.
type RecallQuery struct {
	Text string
	// Kind is KindSemantic ("" too), KindEpisodic or KindAll.
	Kind string
	// Scopes are the streams searched; nil searches every stream.
	Scopes []string
	// Session, when set, ranks down the entries already shown to it
	// (memory/shown events folded into the shown table).
	Session string
	// Limit caps the results (≤ 0: DefaultRecallLimit).
	Limit int
	// Bytes caps the UTF-8 bytes of titles and texts returned, cutting the
	// last one at a character boundary (0: DefaultRecallBytes; < 0: none).
	Bytes int
	// Now is the time of the query, for recency and the review flag
	// (zero: the wall clock).
	Now time.Time
	// Timeout is the deadline of the whole recall (0: DefaultRecallTimeout).
	Timeout time.Duration
	// Clock is read between stages to check the deadline (nil: time.Now).
	// Tests inject one to expire the deadline at a chosen stage.
	Clock func() time.Time
	// KnowledgeDir is <root>/knowledge: a query that names a file there
	// returns the file. "" disables the look-up.
	KnowledgeDir string
	// NoFloor returns every matching candidate, ranked, without the
	// score floors (evaluation, exhaustive search).
	NoFloor bool
	// IncludeInjected also ranks the episodes the host or dshmem injected
	// into a conversation (runtime-context snapshots, dshmem's own tool
	// results), ranked down by Weights.Injected and flagged "injected".
	// Without it they are not candidates at all: they echo memory, they
	// are not something that happened.
	IncludeInjected bool
	// ScopeDirs names the directory of a stream of Scopes (stream → dir)
	// in the guidance given when nothing matches.
	ScopeDirs map[string]string
	// Weights replaces DefaultWeights.
	Weights *Weights
}

// Episode holds the fields of an episodic hit; they keep the names
// `dshmem search --json` has always printed.
type Episode struct {
	EventID  string `json:"eventId"`
	Stream   string `json:"stream"`
	Seq      uint64 `json:"seq"`
	Type     string `json:"type"`
	Session  string `json:"session"`
	Time     string `json:"time"`
	Injected bool   `json:"injected"`
}

// Item is one recalled memory: an entry, an episode or a knowledge file.
type Item struct {
	*Episode `json:",omitempty"`

	ID     string   `json:"id"` // entry id, event id, or knowledge file name
	Kind   string   `json:"kind"`
	Scope  string   `json:"scope"`
	Title  string   `json:"title"`
	Text   string   `json:"text"`
	Score  float64  `json:"score"`
	Status string   `json:"status"` // entry status; "observed" for episodes
	Flags  []string `json:"flags"`  // conflict, review, truncated, injected, shown

	EntryType  string `json:"entryType,omitempty"`
	Importance int    `json:"importance,omitempty"`
	UpdatedAt  string `json:"updatedAt,omitempty"`
}

// Flags an item may carry.
const (
	FlagConflict  = "conflict"  // a conflicting entry: check before relying on it
	FlagReview    = "review"    // not updated for Weights.StaleAfter
	FlagTruncated = "truncated" // text cut by the byte cap
	FlagInjected  = "injected"  // an episode the host injected
	FlagShown     = "shown"     // already shown in this session
)

// RecallResult is what a recall found, and how.
type RecallResult struct {
	Items []Item `json:"items"`
	// Terms are the salient query terms used, most salient first.
	Terms []string `json:"terms"`
	// Candidates counts the documents scored.
	Candidates int `json:"candidates"`
	// Partial is set when the deadline expired; Note says at which stage.
	Partial bool   `json:"partial,omitempty"`
	Note    string `json:"note,omitempty"`
	// Guidance, when nothing was found, says what was searched and what
	// to try.
	Guidance string `json:"guidance,omitempty"`
}

// entryIDPattern is the shape of projector.EntryID.
var entryIDPattern = regexp.MustCompile(`^m-[0-9a-f]{16}$`)

// Recall ranks memories for q: FTS5 yields a bounded candidate set,
// scored in Go with the features of Weights. It never fails because of
// its deadline: when the deadline expires it returns what it has, with
// Partial and Note set. Errors are database errors other than the
// deadline, or a cancelled ctx.
func (s *Store) Recall(ctx context.Context, q RecallQuery) (*RecallResult, error) {
	w := q.Weights
	if w == nil {
		w = &DefaultWeights
	}
	r := &recall{s: s, q: q, w: w, clock: q.Clock, res: &RecallResult{Items: []Item{}, Terms: []string{}}}
	if r.clock == nil {
		r.clock = time.Now
	}
	if r.q.Now.IsZero() {
		r.q.Now = time.Now()
	}
	timeout := q.Timeout
	if timeout <= 0 {
		timeout = DefaultRecallTimeout
	}
	r.deadline = r.clock().Add(timeout)
	var cancel context.CancelFunc
	r.ctx, cancel = context.WithTimeout(ctx, timeout)
	defer cancel()

	text := strings.TrimSpace(q.Text)
	if item, ok, err := r.exact(text); err != nil {
		return r.finish(ctx, err)
	} else if ok {
		r.res.Items = append(r.res.Items, item)
		return r.res, nil
	}
	var kinds []string
	switch q.Kind {
	case "", KindSemantic:
		kinds = []string{KindSemantic}
	case KindEpisodic:
		kinds = []string{KindEpisodic}
	case KindAll:
		kinds = []string{KindSemantic, KindEpisodic}
	default:
		return nil, fmt.Errorf("recall: kind %q: use %s, %s or %s", q.Kind, KindSemantic, KindEpisodic, KindAll)
	}
	// Each kind is ranked on its own connection, at the same time: a
	// search of both kinds then takes about as long as the slower one.
	parts := make([]recall, len(kinds))
	got := make([][]scored, len(kinds))
	errs := make([]error, len(kinds))
	var wg sync.WaitGroup
	for i, k := range kinds {
		parts[i] = *r
		parts[i].res = &RecallResult{Items: []Item{}, Terms: []string{}}
		src := sources[k]
		if k == KindEpisodic && !q.IncludeInjected {
			src = observedEpisodes
		}
		wg.Go(func() { got[i], errs[i] = parts[i].rank(src, text) })
	}
	wg.Wait()
	var all []scored
	for i := range kinds {
		p := &parts[i]
		all = append(all, got[i]...)
		for _, t := range p.res.Terms {
			r.res.Terms = appendUnique(r.res.Terms, t)
		}
		r.res.Candidates += p.res.Candidates
		if p.res.Partial && !r.res.Partial {
			r.res.Partial, r.res.Note = true, p.res.Note
		}
		if p.shown != nil {
			r.shown = p.shown
		}
	}
	for _, err := range errs {
		if err == nil {
			continue
		}
		if _, err := r.finish(ctx, err); err != nil {
			return nil, err
		}
	}
	r.pick(all)
	if len(r.res.Items) == 0 && r.res.Guidance == "" {
		r.res.Guidance = r.guidance(text, kinds)
	}
	return r.res, nil
}

// recall is the state of one Recall call.
type recall struct {
	s        *Store
	q        RecallQuery
	w        *Weights
	ctx      context.Context
	clock    func() time.Time
	deadline time.Time
	res      *RecallResult
	shown    map[string]int
}

// expired reports whether the deadline passed, noting the stage it
// passed in.
func (r *recall) expired(stage string) bool {
	if r.res.Partial {
		return true
	}
	if r.ctx.Err() != nil || r.clock().After(r.deadline) {
		r.res.Partial = true
		r.res.Note = fmt.Sprintf("deadline expired while %s: results are partial", stage)
		return true
	}
	return false
}

// errDeadline stops the stages when the deadline expired.
var errDeadline = errors.New("sqlstore: recall deadline expired")

// finish turns an error met on the way into the result: the deadline
// (our own timeout, or SQLite interrupted by it) becomes a note; a
// cancelled caller or any other error is returned.
func (r *recall) finish(parent context.Context, err error) (*RecallResult, error) {
	if parent.Err() != nil {
		return nil, fmt.Errorf("recall: %w", parent.Err())
	}
	if errors.Is(err, errDeadline) || r.ctx.Err() != nil {
		if !r.res.Partial {
			r.res.Partial = true
			r.res.Note = "deadline expired: results are partial"
		}
		return r.res, nil
	}
	return nil, err
}

// exact answers a query that is an entry id or a knowledge file name
// with that entry or file, whole.
func (r *recall) exact(text string) (Item, bool, error) {
	if entryIDPattern.MatchString(text) {
		var it Item
		err := r.s.db.QueryRowContext(r.ctx, `SELECT id, scope, type, title, content, status, importance, updated_at
			FROM entries WHERE id = ? AND status IN ('active', 'conflict')`, text).
			Scan(&it.ID, &it.Scope, &it.EntryType, &it.Title, &it.Text, &it.Status, &it.Importance, &it.UpdatedAt)
		switch {
		case err == nil:
			it.Kind, it.Score, it.Flags = KindSemantic, 1, r.entryFlags(it.Status, it.UpdatedAt, nil)
			return it, true, nil
		case !errors.Is(err, sql.ErrNoRows):
			return Item{}, false, fmt.Errorf("recall entry %s: %w", text, err)
		}
	}
	if r.q.KnowledgeDir != "" && validFileName(text) {
		for _, name := range []string{text, text + ".md"} {
			b, err := os.ReadFile(filepath.Join(r.q.KnowledgeDir, name))
			if err == nil && utf8.Valid(b) {
				return Item{ID: name, Kind: KindKnowledge, Scope: "global", Title: strings.TrimSuffix(name, ".md"),
					Text: string(b), Score: 1, Status: "active", Flags: []string{}}, true, nil
			}
		}
	}
	return Item{}, false, nil
}

// validFileName accepts a bare file name: no separators, no leading dot.
func validFileName(s string) bool {
	return s != "" && len(s) <= 255 && !strings.ContainsAny(s, `/\`+"\x00") && !strings.HasPrefix(s, ".")
}

// scored is one ranked candidate before the cut.
type scored struct {
	item     Item
	f        features
	lexical  float64
	score    float64
	conflict bool
}

// rank runs the stages of one source: probe the query terms (rarity and
// candidates at once), select the salient ones, gather candidates, fetch
// them, score them. On the deadline it returns what it scored, with
// errDeadline.
func (r *recall) rank(src *source, text string) ([]scored, error) {
	a := analyzeQuery(text, r.w)
	if len(a.terms) == 0 {
		return nil, nil
	}
	scopes, err := json.Marshal(r.q.Scopes)
	if err != nil {
		return nil, fmt.Errorf("recall: %w", err)
	}
	scoped := r.q.Scopes != nil
	st, err := r.s.corpusStats(r.ctx, src, scoped, string(scopes))
	if err != nil {
		return nil, r.wrap("read index size", err)
	}
	if st.rows == 0 {
		return nil, nil
	}
	small := st.rows <= int64(r.w.SmallCorpus)

	// Stage 1: probe. One bounded FTS5 query per term gives the newest
	// rowids holding it and, from how far back the cap reached, its
	// document frequency.
	postings := map[*qterm][]int64{}
	probe := func(qt *qterm) error {
		ids, err := r.s.probe(r.ctx, src, scoped, string(scopes), tokenize.Quote(qt.term), r.w.PerTermCap)
		if err != nil {
			return r.wrap("look up "+qt.term, err)
		}
		qt.probed = true
		qt.df, qt.exactDF = float64(len(ids)), len(ids) < r.w.PerTermCap
		if !qt.exactDF && len(ids) > 0 {
			// The cap was hit: the newest PerTermCap postings span rowids
			// [last, maxN]; assume the term is as dense across the whole
			// index.
			span := float64(st.maxN - ids[len(ids)-1] + 1)
			qt.df = min(float64(len(ids))*float64(st.maxN-st.minN+1)/max(span, 1), float64(st.rows))
		}
		postings[qt] = ids
		return nil
	}
	common := r.w.CommonFraction * float64(st.rows)
	for _, qt := range a.probeOrder(r.w) {
		if r.expired("looking up query terms") {
			break
		}
		key := commonKey{path: r.s.path, kind: src.name, scopes: string(scopes), term: qt.term}
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
	a.selectTerms(float64(st.rows), r.w)
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
		ids, err := r.s.allRows(r.ctx, src, scoped, string(scopes))
		if err != nil {
			return nil, r.wrap("list rows", err)
		}
		add(ids)
	} else {
		rare := make([]*qterm, 0, len(a.sel))
		for _, qt := range a.sel {
			if qt.df > 0 && qt.df <= r.w.CommonFraction*float64(st.rows) {
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
				ids, err := r.s.probe(r.ctx, src, scoped, string(scopes), strings.Join(parts, " AND "), r.w.PoolCap)
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
	if r.expired("gathering candidates") && len(pool) == 0 {
		return nil, errDeadline
	}

	// Stage 3: fetch and tokenize, in chunks, watching the clock.
	if r.q.Session != "" && src.kind == KindSemantic && r.shown == nil {
		if r.shown, err = r.s.shownCounts(r.ctx, r.q.Session); err != nil {
			return nil, r.wrap("read shown entries", err)
		}
	}
	var items []Item
	var docs []*doc
	const chunk = 128
	for off := 0; off < len(pool); off += chunk {
		if off > 0 && r.expired("reading candidates") {
			break
		}
		got, err := r.s.fetch(r.ctx, src, pool[off:min(off+chunk, len(pool))])
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
	for i := range docs {
		f := fs[i]
		if f.Coverage <= 0 && f.Substring == 0 {
			continue
		}
		sc := scored{item: items[i], f: f, lexical: f.lexical(r.w)}
		sc.score = sc.lexical * r.prior(&sc.item)
		sc.item.Score = round4(sc.score)
		sc.conflict = sc.item.Status == "conflict"
		out = append(out, sc)
	}
	if r.res.Partial {
		return out, errDeadline
	}
	return out, nil
}

// wrap names a database error, unless the deadline caused it.
func (r *recall) wrap(what string, err error) error {
	if r.ctx.Err() != nil {
		r.expired(what)
		return errDeadline
	}
	return fmt.Errorf("recall: %s: %w", what, err)
}

// prior multiplies the lexical score by importance, recency, the
// shown penalty and the injected penalty, and sets the matching flags.
func (r *recall) prior(it *Item) float64 {
	p := 1.0
	if it.Kind == KindSemantic {
		p *= 1 + r.w.Importance*float64(it.Importance-1)/2
	}
	when := it.UpdatedAt
	if it.Episode != nil {
		when = it.Episode.Time
	}
	if t, err := time.Parse(time.RFC3339Nano, when); err == nil && r.w.RecencyHalfLife > 0 {
		age := max(r.q.Now.Sub(t), 0)
		p *= 1 + r.w.Recency*math.Exp2(-float64(age)/float64(r.w.RecencyHalfLife))
	}
	if n := r.shown[it.ID]; n > 0 {
		for range n {
			p *= r.w.Shown
		}
		it.Flags = append(it.Flags, FlagShown)
	}
	if it.Episode != nil && it.Episode.Injected {
		p *= r.w.Injected
	}
	return p
}

// pick applies the floors and the conflict rule, sorts, and cuts by
// count and bytes.
func (r *recall) pick(all []scored) {
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].score != all[j].score {
			return all[i].score > all[j].score
		}
		return all[i].item.ID < all[j].item.ID
	})
	best := 0.0
	for _, sc := range all {
		best = max(best, sc.score)
	}
	limit := r.q.Limit
	if limit <= 0 {
		limit = DefaultRecallLimit
	}
	budget := r.q.Bytes
	if budget == 0 {
		budget = DefaultRecallBytes
	}
	for _, sc := range all {
		if len(r.res.Items) >= limit {
			break
		}
		if sc.conflict && sc.f.Coverage < r.w.ConflictCoverage && sc.f.Phrase == 0 && sc.f.Substring == 0 {
			continue // a conflict only when the query hits it
		}
		if !r.q.NoFloor {
			if sc.score < r.w.RelFloor*best {
				continue
			}
			if sc.f.Coverage < r.w.AbsCoverage && sc.f.matchedIDF < r.w.AbsIDF && sc.f.Substring == 0 {
				continue
			}
		}
		it := sc.item
		if budget < 0 { // no byte cap
			r.res.Items = append(r.res.Items, it)
			continue
		}
		need := len(it.Title) + len(it.Text)
		if need > budget {
			room := budget - len(it.Title)
			if room <= 0 {
				break
			}
			it.Text = markdown.CutUTF8(it.Text, room)
			it.Flags = append(it.Flags, FlagTruncated)
			need = budget
		}
		budget -= need
		r.res.Items = append(r.res.Items, it)
		if budget == 0 {
			break
		}
	}
}

// entryFlags are the flags an entry carries whatever the query.
func (r *recall) entryFlags(status, updatedAt string, flags []string) []string {
	if flags == nil {
		flags = []string{}
	}
	if status == "conflict" {
		flags = append(flags, FlagConflict)
	}
	if t, err := time.Parse(time.RFC3339Nano, updatedAt); err == nil && r.w.StaleAfter > 0 && r.q.Now.Sub(t) > r.w.StaleAfter {
		flags = append(flags, FlagReview)
	}
	return flags
}

// guidance says what was searched and what to try when nothing was found.
func (r *recall) guidance(text string, kinds []string) string {
	what := "memory entries"
	switch {
	case len(kinds) == 2:
		what = "memory entries and observed messages"
	case kinds[0] == KindEpisodic:
		what = "observed messages"
	}
	where := "every scope"
	if r.q.Scopes != nil {
		names := make([]string, len(r.q.Scopes))
		for i, s := range r.q.Scopes {
			names[i] = s
			if d := r.q.ScopeDirs[s]; d != "" {
				names[i] = d + " (" + s + ")"
			}
		}
		where = "scopes " + strings.Join(names, ", ")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Nothing in %s of %s matches %q", what, where, clip(text, 80))
	if len(r.res.Terms) > 0 {
		fmt.Fprintf(&b, " (searched for %s; %d candidates scored)", strings.Join(r.res.Terms[:min(len(r.res.Terms), 8)], ", "), r.res.Candidates)
	} else {
		b.WriteString(" (none of its words is in the index)")
	}
	b.WriteString(".\nTry: other or fewer words (a word from the entry's title works best); an entry id (m-…) or a knowledge file name for the whole text;")
	if len(kinds) == 1 && kinds[0] == KindSemantic {
		b.WriteString(" 'dshmem search --kind all' to include observed messages;")
	}
	if r.q.Scopes != nil {
		b.WriteString(" another --cwd for another workspace's memory;")
	}
	if slices.Contains(kinds, KindEpisodic) && !r.q.IncludeInjected {
		b.WriteString(" --include-injected for text the host or dshmem injected (memory shown back, runtime context);")
	}
	b.WriteString(" 'dshmem stats' to see what the index holds.")
	return b.String()
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

func round4(f float64) float64 {
	return float64(int64(f*10000+0.5)) / 10000
}

// intersect returns the rowids in every list, in the order of the first
// (newest first, as probes return them), at most limit.
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
