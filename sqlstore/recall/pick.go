package recall

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"dshmem/events/payload"
	"dshmem/markdown"
)

// prior multiplies the lexical score by importance, recency, the
// shown penalty and the injected penalty, and sets the matching flags.
func (r *call) prior(it *Item) float64 {
	p := 1.0
	if it.Kind == KindSemantic {
		p *= 1 + r.w.Importance*float64(it.Importance-1)/2
		p *= 1 - r.w.Confidence*(1-payload.ClampConfidence(it.Confidence))
		if it.Confidence < payload.LowConfidence {
			it.Flags = append(it.Flags, FlagLowConfidence)
		}
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
func (r *call) pick(all []scored) {
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].score != all[j].score {
			return all[i].score > all[j].score
		}
		if all[i].lexical != all[j].lexical { // a fused tie: the words' order (FuseDense)
			return all[i].lexical > all[j].lexical
		}
		return all[i].item.ID < all[j].item.ID
	})
	best := 0.0
	for _, sc := range all {
		best = max(best, sc.score)
	}
	limit := r.q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	budget := r.q.Bytes
	if budget == 0 {
		budget = DefaultBytes
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
			if sc.f.Coverage < r.w.AbsCoverage && sc.f.matchedIDF < r.w.AbsIDF && sc.f.Substring == 0 && sc.dense < r.w.DenseFloor {
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
			if room <= 0 && len(r.res.Items) > 0 {
				break
			}
			if room < 0 {
				// Not even the best match's title fits: it is cut too, so
				// that a small budget still answers with it.
				if it.Title, room = markdown.CutUTF8(it.Title, budget), 0; it.Title == "" {
					r.tooSmall = true // under its first character
					break
				}
			}
			it.Text = markdown.CutUTF8(it.Text, room)
			it.Flags = append(it.Flags, FlagTruncated)
			need = budget // a cut one is the last
		}
		budget -= need
		r.res.Items = append(r.res.Items, it)
		if budget == 0 {
			break
		}
	}
}

// entryFlags are the flags an entry carries whatever the query.
func (r *call) entryFlags(status, updatedAt string, flags []string) []string {
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
func (r *call) guidance(text string, kinds []string) string {
	what := "memory entries"
	switch {
	case len(kinds) == 2:
		what = "memory entries and observed messages"
	case kinds[0] == KindEpisodic:
		what = "observed messages"
	}
	where := "every scope"
	if r.everyScope && r.q.Scopes != nil {
		where = "every scope not archived"
	} else if r.q.Scopes != nil {
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
	if r.tooSmall {
		fmt.Fprintf(&b, "%s%s of %s match %q, but a byte budget of %d holds none of them: raise --bytes.", strings.ToUpper(what[:1]), what[1:], where, clip(text, 80), r.q.Bytes)
		return b.String()
	}
	fmt.Fprintf(&b, "Nothing in %s of %s matches %q", what, where, clip(text, 80))
	if len(r.res.Terms) > 0 {
		scored := fmt.Sprintf("%d candidates scored", r.res.Candidates)
		if r.res.Candidates == 1 {
			scored = "1 candidate scored"
		}
		fmt.Fprintf(&b, " (searched for %s; %s)", strings.Join(r.res.Terms[:min(len(r.res.Terms), 8)], ", "), scored)
	} else {
		b.WriteString(" (none of its words is in the index)")
	}
	b.WriteString(".\nTry: other or fewer words (a word from the entry's title works best); an entry id (m-…) or a knowledge file name for the whole text;")
	if len(kinds) == 1 && kinds[0] == KindSemantic {
		b.WriteString(" 'dshmem search --kind all' to include observed messages;")
	}
	if r.q.Scopes != nil && !r.everyScope {
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

func round4(f float64) float64 {
	return float64(int64(f*10000+0.5)) / 10000
}
