package observer

import (
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

	"dshmem/observer/secretrules"
)

// maxPasses bounds the passes of String. Every pass that changes the text
// turns at least one byte outside placeholders into a placeholder, so the
// loop ends anyway; in practice the second pass finds nothing.
const maxPasses = 16

// Redactor replaces credential-shaped text with "[REDACTED:<kind>]"
// (ARCHITECTURE §8) by the built-in rules. It holds no state: it is safe
// for concurrent use and its zero value is ready to use.
type Redactor struct{}

// NewRedactor returns a Redactor.
func NewRedactor() *Redactor { return &Redactor{} }

// String redacts s and returns the kinds it found, sorted, or nil.
// Redacting the output again changes nothing.
func (r *Redactor) String(s string) (string, []string) {
	found := map[string]bool{}
	s = r.redact(s, found)
	return s, sortedKinds(found)
}

func (r *Redactor) redact(s string, found map[string]bool) string {
	idx := ruleHints()
	for range maxPasses {
		changed := false
		low := lowerASCII(s) // once per pass, not once per rule
		hinted := idx.of(low)
		for _, late := range []bool{false, true} {
			for i := range rules {
				if rules[i].late != late || !hinted.has(i) {
					continue
				}
				var did bool
				s, did = rules[i].apply(s, found)
				if did {
					low = lowerASCII(s)
					hinted = idx.of(low)
				}
				changed = changed || did
			}
			if !late {
				var did bool
				s, did = applyRuleSet(s, low, found)
				if did {
					low = lowerASCII(s)
					hinted = idx.of(low)
				}
				changed = changed || did
			}
		}
		if !changed {
			break
		}
	}
	return s
}

// ruleMask is a set of indexes into rules.
type ruleMask [2]uint64

func (m *ruleMask) add(i int)     { m[i/64] |= 1 << (i % 64) }
func (m ruleMask) has(i int) bool { return m[i/64]&(1<<(i%64)) != 0 }

// hintIndex finds, in one pass over a lower-cased text, the rules one of
// whose hints it holds (a rule without hints always runs); before it,
// each of the rules' 60-odd hints was a substring search of its own.
type hintIndex struct {
	m       *secretrules.Matcher
	rulesOf []ruleMask // keyword → the rules it hints
	always  ruleMask
}

var ruleHints = sync.OnceValue(func() *hintIndex {
	if len(rules) > len(ruleMask{})*64 {
		panic("redact: more rules than ruleMask holds")
	}
	h := &hintIndex{}
	var kws []string
	at := map[string]int{}
	for i := range rules {
		if rules[i].hints == nil {
			h.always.add(i)
			continue
		}
		for _, k := range rules[i].hints {
			ki, ok := at[k]
			if !ok {
				ki = len(kws)
				at[k] = ki
				kws = append(kws, k)
				h.rulesOf = append(h.rulesOf, ruleMask{})
			}
			h.rulesOf[ki].add(i)
		}
	}
	h.m = secretrules.NewMatcher(kws)
	return h
})

// of returns the rules hinted in low.
func (h *hintIndex) of(low string) ruleMask {
	m := h.always
	h.m.Each(low, func(ki, _ int) {
		m[0] |= h.rulesOf[ki][0]
		m[1] |= h.rulesOf[ki][1]
	})
	return m
}

// apply replaces every match of the rule in s whose secret is not already
// a placeholder, and reports whether it replaced any. The caller has
// found one of the rule's hints in s (hintIndex).
func (ru *rule) apply(s string, found map[string]bool) (string, bool) {
	if !ru.perLine {
		if !ru.hasSep(s) {
			return s, false
		}
		return ru.replace(s, found)
	}
	if !ru.hasSep(s) {
		return s, false // no line holds one either
	}
	var b strings.Builder
	changed := false
	for rest := s; rest != ""; {
		line, tail, nl := strings.Cut(rest, "\n")
		rest = tail
		if ru.hasSep(line) && ru.hinted(line) {
			var did bool
			line, did = ru.replace(line, found)
			changed = changed || did
		}
		b.WriteString(line)
		if nl {
			b.WriteByte('\n')
		}
	}
	if !changed {
		return s, false
	}
	return b.String(), true
}

// hasSep reports whether s holds one of the rule's separators (any s,
// for a rule without them).
func (ru *rule) hasSep(s string) bool {
	return ru.seps == "" || strings.ContainsAny(s, ru.seps)
}

// hinted reports whether s, lower-cased, holds one of the rule's hints.
func (ru *rule) hinted(s string) bool {
	return ru.hintedLower(lowerASCII(s))
}

// hintedLower is hinted for text already lower-cased with lowerASCII.
func (ru *rule) hintedLower(low string) bool {
	if ru.hints == nil {
		return true
	}
	for _, h := range ru.hints {
		if strings.Contains(low, h) {
			return true
		}
	}
	return false
}

// lowerASCII lower-cases A–Z only, so byte offsets do not move.
func lowerASCII(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return 'A' <= r && r <= 'Z' })
	if i < 0 {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		if c := b[i]; 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// replace does the work of apply on one text.
func (ru *rule) replace(s string, found map[string]bool) (string, bool) {
	locs := ru.re.FindAllStringSubmatchIndex(s, -1)
	if locs == nil {
		return s, false
	}
	holders := placeholderRe.FindAllStringIndex(s, -1)
	var b strings.Builder
	last, changed := 0, false
	for _, loc := range locs {
		start, end := loc[0], loc[1]
		for _, g := range ru.groups {
			if loc[2*g] >= 0 {
				start, end = loc[2*g], loc[2*g+1]
				break
			}
		}
		// Matches come in order, so placeholders wholly before this one
		// can be dropped for the next.
		for len(holders) > 0 && holders[0][1] <= start {
			holders = holders[1:]
		}
		if !opaqueFree(start, end, holders) {
			continue
		}
		if ru.valid != nil && !ru.valid(s[start:end]) {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(placeholder(ru.kind))
		last, changed = end, true
		found[ru.kind] = true
	}
	if !changed {
		return s, false
	}
	b.WriteString(s[last:])
	return b.String(), true
}

// WarmRedaction builds what redaction needs on first use (every rule of
// the maintained set compiled, the hint index) now: serve runs it in the
// background at start, so its first writes do not wait for it.
func WarmRedaction() {
	ruleHints()
	secretrules.Warm(time.Millisecond)
}

// ruleSet is the maintained rule set (observer/secretrules); it runs
// after the rules above, so a shape both know is named by our kind.
func ruleSet() *secretrules.Set {
	set, err := secretrules.Default()
	if err != nil {
		// The rules are embedded data that TestRuleSet compiles: this is
		// a broken build, not bad input.
		panic("redact: " + err.Error())
	}
	return set
}

// applyRuleSet replaces what the rule set finds in s, as rule.replace
// does for one of ours: never inside or from the start of a placeholder.
func applyRuleSet(s, low string, found map[string]bool) (string, bool) {
	fs := ruleSet().Find(s, low)
	if len(fs) == 0 {
		return s, false
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Start < fs[j].Start })
	holders := placeholderRe.FindAllStringIndex(s, -1)
	var b strings.Builder
	last, changed := 0, false
	for _, f := range fs {
		if f.Start < last || !opaqueFree(f.Start, f.End, holders) {
			continue // overlaps a finding already replaced, or a placeholder
		}
		b.WriteString(s[last:f.Start])
		b.WriteString(placeholder(f.Rule))
		last, changed = f.End, true
		found[f.Rule] = true
	}
	if !changed {
		return s, false
	}
	b.WriteString(s[last:])
	return b.String(), true
}

// opaqueFree reports whether s[start:end] may be replaced: it must not cut
// into a placeholder nor start with one. A span that starts with a
// placeholder is a value an earlier, more specific rule has already
// redacted; what follows it is context, such as "@github.com/org/repo"
// after "x-access-token:[REDACTED:url-credentials]", and stays.
func opaqueFree(start, end int, holders [][]int) bool {
	if start >= end {
		return false
	}
	for _, h := range holders {
		if h[0] >= end {
			break
		}
		if h[1] <= start {
			continue
		}
		if h[0] <= start || h[1] > end {
			return false
		}
	}
	return true
}

func sortedKinds(found map[string]bool) []string {
	if len(found) == 0 {
		return nil
	}
	kinds := make([]string, 0, len(found))
	for k := range found {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

// labelledPlaceholder is a placeholder with what may stand before it in a
// text that holds nothing but credentials: "export", a key and separator,
// "Bearer", "Authorization: Basic".
var labelledPlaceholder = regexp.MustCompile(
	`(?i)(?:(?:export|set)\s+)?(?:[\w.-]+` + kvSep + `["']?|(?:密码|口令|密钥|令牌)` + kvSep + `|(?:bearer|token|basic)\s+)?` +
		`(?:(?:bearer|token|basic)\s+)?\[REDACTED:[a-z0-9-]+\]`)

// OnlySecret reports whether s holds nothing but credentials: after
// redaction, and after removing each placeholder with the label or
// key= before it, no letter or digit is left. An explicit memory write of
// such text is refused: the memory would be the secret.
func OnlySecret(s string) bool {
	red, kinds := (&Redactor{}).String(s)
	if len(kinds) == 0 {
		return false
	}
	rest := labelledPlaceholder.ReplaceAllString(red, " ")
	return strings.IndexFunc(rest, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0
}
