package recall

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"dshmem/events/payload"
	"dshmem/sqlstore"
	"dshmem/sqlstore/vectors"
)

// Kinds of memory a recall or search ranks.
const (
	KindSemantic  = "semantic"  // entries (ARCHITECTURE §5)
	KindEpisodic  = "episodic"  // observed messages
	KindAll       = "all"       // both, ranked together
	KindKnowledge = "knowledge" // a knowledge file named by the query
)

// Defaults of a Query (issue 4).
const (
	DefaultLimit   = 8
	DefaultBytes   = 5000
	DefaultTimeout = 250 * time.Millisecond
)

// Query asks for the memories that match Text. The zero value of
// every field but Text works.
type Query struct {
	Text string
	// Kind is KindSemantic ("" too), KindEpisodic or KindAll.
	Kind string
	// Scopes are the streams searched; nil searches every stream.
	Scopes []string
	// Session, when set, ranks down the entries already shown to it
	// (memory/shown events folded into the shown table).
	Session string
	// Limit caps the results (≤ 0: DefaultLimit).
	Limit int
	// Bytes caps the UTF-8 bytes of titles and texts returned, cutting the
	// last one at a character boundary (0: DefaultBytes; < 0: none).
	Bytes int
	// Now is the time of the query, for recency and the review flag
	// (zero: the wall clock).
	Now time.Time
	// Timeout is the deadline of the whole recall (0: DefaultTimeout).
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
	// Dense, when set (the sentence encoder is installed), adds the
	// nearest vectors of the scopes to the candidates and fuses their
	// cosines with the lexical scores (fuse.go), for an English query;
	// nil ranks by words alone.
	Dense *vectors.Dense
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
	// Confidence of an entry, 0–1 (moved by evidence, issue 16).
	Confidence float64 `json:"confidence,omitempty"`
}

// ShownEntry reports whether it is a memory entry given to the caller
// enough to count as shown (memory/shown): not one a byte budget cut
// down to its title or a part of it.
func (it Item) ShownEntry() bool {
	return it.Kind == KindSemantic && (it.Text != "" || !slices.Contains(it.Flags, FlagTruncated))
}

// Flags an item may carry.
const (
	FlagConflict  = "conflict"  // a conflicting entry: check before relying on it
	FlagReview    = "review"    // not updated for Weights.StaleAfter
	FlagTruncated = "truncated" // text cut by the byte cap
	FlagInjected  = "injected"  // an episode the host injected
	FlagShown     = "shown"     // already shown in this session
	// FlagLowConfidence: an entry below payload.LowConfidence (evidence
	// spoke against it): treat it as a guess.
	FlagLowConfidence = "low-confidence"
)

// Result is what a recall found, and how.
type Result struct {
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
	// Expanded lists the aliases of the queried scopes the query was
	// expanded with ("PG → PostgreSQL").
	Expanded []string `json:"expanded,omitempty"`
}

// expand expands text with the aliases learned in the queried scopes
// (expandAliases): an alias of one workspace never reaches another's
// queries.
func (r *call) expand(text string) (string, []string, error) {
	rows, err := r.s.Aliases(r.ctx, r.q.Scopes)
	if err != nil || len(rows) == 0 {
		return text, nil, err
	}
	as := make([]Alias, len(rows))
	for i, a := range rows {
		as[i] = Alias{a.Alias, a.Expansion}
	}
	text, used := expandAliases(text, as)
	return text, used, nil
}

// entryIDPattern is the shape of projector.EntryID.
var entryIDPattern = regexp.MustCompile(`^m-[0-9a-f]{16}$`)

// Find ranks the memories of s for q: FTS5 yields a bounded candidate
// set, scored in Go with the features of Weights. It never fails because
// of its deadline: when the deadline expires it returns what it has,
// with Partial and Note set. Errors are database errors other than the
// deadline, or a cancelled ctx.
func Find(ctx context.Context, s *sqlstore.Store, q Query) (*Result, error) {
	w := q.Weights
	if w == nil {
		w = &DefaultWeights
	}
	r := &call{s: s, q: q, w: w, clock: q.Clock, res: &Result{Items: []Item{}, Terms: []string{}}}
	if r.clock == nil {
		r.clock = time.Now
	}
	if r.q.Now.IsZero() {
		r.q.Now = time.Now()
	}
	timeout := q.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	r.deadline = r.clock().Add(timeout)
	var cancel context.CancelFunc
	r.ctx, cancel = context.WithTimeout(ctx, timeout)
	defer cancel()

	// Archived scopes (the recycle bin) are never searched.
	scopes, err := activeScopes(r.ctx, s, r.q.Scopes)
	if err != nil {
		return r.finish(ctx, err)
	}
	r.everyScope = q.Scopes == nil
	r.q.Scopes = scopes

	text := strings.TrimSpace(q.Text)
	if item, ok, err := r.exact(text); err != nil {
		return r.finish(ctx, err)
	} else if ok {
		r.res.Items = append(r.res.Items, item)
		return r.res, nil
	}
	if text, r.res.Expanded, err = r.expand(text); err != nil {
		return r.finish(ctx, err)
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
	parts := make([]call, len(kinds))
	got := make([][]scored, len(kinds))
	errs := make([]error, len(kinds))
	var wg sync.WaitGroup
	for i, k := range kinds {
		parts[i] = *r
		parts[i].res = &Result{Items: []Item{}, Terms: []string{}}
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
		r.res.Guidance = r.guidance(strings.TrimSpace(q.Text), kinds) // the words asked, not their expansion
	}
	return r.res, nil
}

// call is the state of one Find call.
type call struct {
	tooSmall bool // the budget held not even the first character of the best match's title
	s        *sqlstore.Store
	q        Query
	w        *Weights
	ctx      context.Context
	clock    func() time.Time
	deadline time.Time
	res      *Result
	shown    map[string]int
	// everyScope: the caller searched every scope (Scopes nil), which
	// activeScopes may have turned into the list of those not archived.
	everyScope bool
}

// expired reports whether the deadline passed, noting the stage it
// passed in.
func (r *call) expired(stage string) bool {
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
var errDeadline = errors.New("recall: deadline expired")

// finish turns an error met on the way into the result: the deadline
// (our own timeout, or SQLite interrupted by it) becomes a note; a
// cancelled caller or any other error is returned.
func (r *call) finish(parent context.Context, err error) (*Result, error) {
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
func (r *call) exact(text string) (Item, bool, error) {
	if entryIDPattern.MatchString(text) {
		e, ok, err := r.s.Entry(r.ctx, text)
		if err != nil {
			return Item{}, false, fmt.Errorf("recall entry %s: %w", text, err)
		}
		if ok && (e.Status == "active" || e.Status == "conflict") && (r.q.Scopes == nil || slices.Contains(r.q.Scopes, e.Scope)) {
			it := Item{ID: e.ID, Kind: KindSemantic, Scope: e.Scope, Title: e.Title, Text: e.Content, Score: 1,
				Status: e.Status, EntryType: e.Type, Importance: e.Importance, UpdatedAt: e.UpdatedAt, Confidence: e.Confidence}
			it.Flags = r.entryFlags(it.Status, it.UpdatedAt, nil)
			if it.Confidence < payload.LowConfidence {
				it.Flags = append(it.Flags, FlagLowConfidence)
			}
			return it, true, nil
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

// wrap names a database error, unless the deadline caused it.
func (r *call) wrap(what string, err error) error {
	if r.ctx.Err() != nil {
		r.expired(what)
		return errDeadline
	}
	return fmt.Errorf("recall: %s: %w", what, err)
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// activeScopes returns the streams a query searches once archived
// scopes are left out: scopes without the archived ones, or, for nil
// (every stream), nil when none is archived and else every folded
// stream that is not.
func activeScopes(ctx context.Context, s *sqlstore.Store, scopes []string) ([]string, error) {
	archived, err := s.ArchivedScopes(ctx)
	if err != nil || len(archived) == 0 {
		return scopes, err
	}
	if scopes == nil {
		cursors, err := s.Cursors()
		if err != nil {
			return nil, fmt.Errorf("recall: %w", err)
		}
		scopes = []string{}
		for st := range cursors {
			scopes = append(scopes, st)
		}
		slices.Sort(scopes)
	}
	out := []string{}
	for _, st := range scopes {
		if !slices.Contains(archived, st) {
			out = append(out, st)
		}
	}
	return out, nil
}
