package secretrules

import (
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// Excluded names the rules of the file that are not used, and why.
var Excluded = map[string]string{
	// Our own key=value rule (observer/redact.go) covers the same ground
	// with the false-positive checks our corpora were measured with; the
	// generic rule matches any "key: <10+ characters>" and would redact
	// ordinary configuration text.
	"generic-api-key": "covered by dshmem's key=value rule",
	// dshmem's own jwt rule (eyJ…) finds every JWT; this one's keyword,
	// "ey", is in most English text ("they", "key") and would run its
	// regular expression on nearly every line.
	"jwt": "covered by dshmem's jwt rule",
}

// Finding is one secret in a text: its byte span and the rule's id.
type Finding struct {
	Start, End int
	Rule       string
}

// Set is the compiled rule set. It is safe for concurrent use.
type Set struct {
	rules  []*compiled
	global allow
	kw     *Matcher
	// byKeyword lists, for each keyword of kw, the rules it selects;
	// kwLen its length.
	byKeyword [][]int
	kwLen     []int
	// Skipped lists rules left out: path-only rules (an event has no
	// file path) and Excluded ones, with the reason.
	Skipped map[string]string
}

type compiled struct {
	id          string
	entropy     float64
	secretGroup int
	// regex and allowSrc are the rule's source; load compiles them on the
	// rule's first use (a keyword of it in a text), so a process pays for
	// the rules its texts touch, not for all 200 at its first write.
	regex    string
	allowSrc []Allowlist
	once     sync.Once
	err      error
	re       *regexp.Regexp
	// maxLen bounds the bytes of a match (-1: unbounded), so the rule
	// runs only on windows around its keywords (see windows).
	maxLen int
	allows []allow
}

// load compiles the rule once; later calls return the first's error.
func (c *compiled) load() error {
	c.once.Do(func() { c.err = c.build() })
	return c.err
}

func (c *compiled) build() error {
	re, err := regexp.Compile(c.regex)
	if err != nil {
		return fmt.Errorf("rule %s: %w", c.id, err)
	}
	if c.secretGroup > re.NumSubexp() {
		return fmt.Errorf("rule %s: secretGroup %d, but the regex has %d groups", c.id, c.secretGroup, re.NumSubexp())
	}
	for _, a := range c.allowSrc {
		ca, err := compileAllow(a)
		if err != nil {
			return fmt.Errorf("rule %s: allowlist: %w", c.id, err)
		}
		c.allows = append(c.allows, ca)
	}
	c.re, c.maxLen = re, maxMatchLen(c.regex)
	return nil
}

type allow struct {
	target    string // secret, match, line
	regexes   []*regexp.Regexp
	stopwords []string
}

var (
	defaultOnce sync.Once
	defaultSet  *Set
	defaultErr  error
)

// Default returns the embedded rule set, parsed on first use; each of its
// about 200 regular expressions is compiled when a text first holds one
// of its keywords (all of them took 23 ms, which a server's first write
// paid). TestDefaultCompiles compiles every one, so a rule of the
// embedded file never fails to load at run time.
func Default() (*Set, error) {
	defaultOnce.Do(func() {
		cfg, err := Parse(gitleaksTOML)
		if err != nil {
			defaultErr = fmt.Errorf("secret rules (%s): %w", Source, err)
			return
		}
		defaultSet, defaultErr = compile(cfg, false)
	})
	return defaultSet, defaultErr
}

// Warm compiles every rule of Default now, for a long-running process
// that would rather pay it at its start than spread it over its first
// texts (a rule compiles in up to a few milliseconds, which a write that
// first met its keyword would wait for). pause is the rest between two
// rules, so that the compiles (25 ms in all) do not take a core at once.
// Safe beside Find: each rule compiles once, whoever comes first.
func Warm(pause time.Duration) {
	if s, err := Default(); err == nil {
		_ = s.loadAll(pause) // TestDefaultCompiles: it cannot fail
	}
}

// Compile turns a parsed file into a Set, compiling every rule now, so
// that a bad expression is an error here.
func Compile(cfg *Config) (*Set, error) { return compile(cfg, true) }

// compile builds the Set; with eager false a rule's expressions are
// compiled on its first use instead (compiled.load).
func compile(cfg *Config, eager bool) (*Set, error) {
	s := &Set{Skipped: map[string]string{}}
	var err error
	if s.global, err = compileAllow(cfg.Global); err != nil {
		return nil, fmt.Errorf("global allowlist: %w", err)
	}
	var keywords []string
	kwIndex := map[string]int{}
	for _, r := range cfg.Rules {
		if why, ok := Excluded[r.ID]; ok {
			s.Skipped[r.ID] = why
			continue
		}
		if r.Path != "" || r.Regex == "" {
			s.Skipped[r.ID] = "applies to file paths only"
			continue
		}
		if len(r.Keywords) == 0 {
			return nil, fmt.Errorf("rule %s: no keywords (every rule needs one, so that text without it is skipped)", r.ID)
		}
		c := &compiled{id: r.ID, regex: r.Regex, entropy: r.Entropy, secretGroup: r.SecretGroup}
		for _, a := range r.Allowlists {
			if strings.EqualFold(a.Condition, "AND") && len(a.Paths) > 0 {
				// Holds only together with a file path, which text has not.
				continue
			}
			if len(a.Regexes) == 0 && len(a.Stopwords) == 0 {
				continue // paths only
			}
			c.allowSrc = append(c.allowSrc, a)
		}
		idx := len(s.rules)
		s.rules = append(s.rules, c)
		for _, k := range r.Keywords {
			k = strings.ToLower(k)
			ki, ok := kwIndex[k]
			if !ok {
				ki = len(keywords)
				kwIndex[k] = ki
				keywords = append(keywords, k)
				s.byKeyword = append(s.byKeyword, nil)
				s.kwLen = append(s.kwLen, len(k))
			}
			s.byKeyword[ki] = append(s.byKeyword[ki], idx)
		}
	}
	if eager {
		if err := s.loadAll(0); err != nil {
			return nil, err
		}
	}
	s.kw = NewMatcher(keywords)
	return s, nil
}

// loadAll compiles every rule, resting pause after each, and returns the
// first error.
func (s *Set) loadAll(pause time.Duration) error {
	for _, r := range s.rules {
		if err := r.load(); err != nil {
			return err
		}
		if pause > 0 {
			time.Sleep(pause)
		}
	}
	return nil
}

func compileAllow(a Allowlist) (allow, error) {
	out := allow{target: a.RegexTarget}
	if out.target == "" {
		out.target = "secret"
	}
	switch out.target {
	case "secret", "match", "line":
	default:
		return allow{}, fmt.Errorf("unknown regexTarget %q", a.RegexTarget)
	}
	for _, x := range a.Regexes {
		re, err := regexp.Compile(x)
		if err != nil {
			return allow{}, err
		}
		out.regexes = append(out.regexes, re)
	}
	for _, w := range a.Stopwords {
		out.stopwords = append(out.stopwords, strings.ToLower(w))
	}
	return out, nil
}

// Rules returns the ids of the rules in use, in file order.
func (s *Set) Rules() []string {
	ids := make([]string, len(s.rules))
	for i, r := range s.rules {
		ids[i] = r.id
	}
	return ids
}

// Find returns the secrets in text, in rule order and, within a rule, in
// text order. lower is text with A–Z lower-cased (byte offsets equal);
// only rules one of whose keywords occurs in it are run, and each only on
// windows of text around those occurrences.
func (s *Set) Find(text, lower string) []Finding {
	var hits map[int][]span // rule → keyword occurrences
	s.kw.Each(lower, func(ki, end int) {
		if hits == nil {
			hits = map[int][]span{}
		}
		for _, ri := range s.byKeyword[ki] {
			hits[ri] = append(hits[ri], span{end - s.kwLen[ki], end})
		}
	})
	if hits == nil {
		return nil
	}
	var out []Finding
	for ri := range s.rules {
		occ, ok := hits[ri]
		if !ok {
			continue
		}
		r := s.rules[ri]
		if err := r.load(); err != nil {
			// Only Default loads lazily, and TestDefaultCompiles loads
			// each of its rules: this is a broken build, not bad input.
			panic("secretrules: " + err.Error())
		}
		seen := map[span]bool{}
		for _, w := range windows(text, occ, r.maxLen) {
			for _, loc := range r.re.FindAllStringSubmatchIndex(text[w.start:w.end], -1) {
				for i := range loc {
					if loc[i] >= 0 {
						loc[i] += w.start
					}
				}
				if f, ok := s.check(r, text, loc); ok && !seen[span{f.Start, f.End}] {
					seen[span{f.Start, f.End}] = true
					out = append(out, f)
				}
			}
		}
	}
	return out
}

// span is a byte range of a text.
type span struct{ start, end int }

// windows returns the merged ranges of text a match holding one of the
// occurrences can lie in: maxLen bytes either side of each (a match of at
// most maxLen bytes that holds the occurrence lies within maxLen of it),
// widened to the nearest non-word bytes so that \b at a window's edge
// means what it means in the whole text; unbounded rules get the lines
// that hold an occurrence.
func windows(text string, occ []span, maxLen int) []span {
	var out []span
	for _, o := range occ {
		var w span
		if maxLen < 0 {
			w.start = strings.LastIndexByte(text[:o.start], '\n') + 1
			if nl := strings.IndexByte(text[o.end:], '\n'); nl >= 0 {
				w.end = o.end + nl
			} else {
				w.end = len(text)
			}
		} else {
			w = span{max(0, o.start-maxLen), min(len(text), o.end+maxLen)}
			for w.start > 0 && isWordByte(text[w.start-1]) {
				w.start--
			}
			for w.end < len(text) && isWordByte(text[w.end]) {
				w.end++
			}
		}
		if n := len(out); n > 0 && w.start <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, w.end)
			continue
		}
		out = append(out, w)
	}
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// check turns a match into a finding unless the rule's checks (entropy,
// allowlists) keep it.
func (s *Set) check(r *compiled, text string, loc []int) (Finding, bool) {
	start, end := loc[0], loc[1]
	if r.secretGroup > 0 {
		start, end = loc[2*r.secretGroup], loc[2*r.secretGroup+1]
	} else {
		for g := 1; 2*g < len(loc); g++ {
			if loc[2*g] >= 0 && loc[2*g+1] > loc[2*g] {
				start, end = loc[2*g], loc[2*g+1]
				break
			}
		}
	}
	if start < 0 || start >= end {
		return Finding{}, false
	}
	secret, match, line := text[start:end], text[loc[0]:loc[1]], lineOf(text, loc[0], loc[1])
	if r.entropy > 0 && Entropy(secret) < r.entropy {
		return Finding{}, false
	}
	if s.global.allows(secret, match, line) {
		return Finding{}, false
	}
	for i := range r.allows {
		if r.allows[i].allows(secret, match, line) {
			return Finding{}, false
		}
	}
	return Finding{Start: start, End: end, Rule: r.id}, true
}

// maxMatchLen is the most bytes a match of the expression can take, or -1
// when that is unbounded (or the expression does not parse).
func maxMatchLen(expr string) int {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return -1
	}
	return maxLen(re.Simplify())
}

func maxLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpNoMatch:
		return 0
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			n += utf8.RuneLen(r)
			if re.Flags&syntax.FoldCase != 0 {
				n += 2 // a fold may be longer (K → Kelvin sign)
			}
		}
		return n
	case syntax.OpCharClass:
		// Rune holds ranges lo, hi; the widest rune bounds the bytes.
		n := 0
		for i := 1; i < len(re.Rune); i += 2 {
			l := utf8.RuneLen(min(re.Rune[i], unicode.MaxRune))
			if l < 0 {
				l = utf8.UTFMax // a surrogate: encoded as U+FFFD
			}
			n = max(n, l)
		}
		return n
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		return utf8.UTFMax
	case syntax.OpCapture:
		return maxLen(re.Sub[0])
	case syntax.OpQuest:
		return maxLen(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		return -1
	case syntax.OpRepeat:
		if re.Max < 0 {
			return -1
		}
		n := maxLen(re.Sub[0])
		if n < 0 {
			return -1
		}
		return n * re.Max
	case syntax.OpConcat:
		total := 0
		for _, sub := range re.Sub {
			n := maxLen(sub)
			if n < 0 {
				return -1
			}
			total += n
		}
		return total
	case syntax.OpAlternate:
		most := 0
		for _, sub := range re.Sub {
			n := maxLen(sub)
			if n < 0 {
				return -1
			}
			most = max(most, n)
		}
		return most
	}
	return -1
}

func (a *allow) allows(secret, match, line string) bool {
	target := secret
	switch a.target {
	case "match":
		target = match
	case "line":
		target = line
	}
	for _, re := range a.regexes {
		if re.MatchString(target) {
			return true
		}
	}
	if len(a.stopwords) > 0 {
		low := strings.ToLower(secret)
		for _, w := range a.stopwords {
			if strings.Contains(low, w) {
				return true
			}
		}
	}
	return false
}

// lineOf returns the line(s) of text holding text[start:end].
func lineOf(text string, start, end int) string {
	from := strings.LastIndexByte(text[:start], '\n') + 1
	to := strings.IndexByte(text[end:], '\n')
	if to < 0 {
		return text[from:]
	}
	return text[from : end+to]
}

// Entropy is the Shannon entropy of s in bits per byte, over its bytes'
// runes, as gitleaks computes it.
func Entropy(s string) float64 {
	if s == "" {
		return 0
	}
	counts := map[rune]int{}
	for _, r := range s {
		counts[r]++
	}
	inv := 1 / float64(len(s))
	e := 0.0
	for _, n := range counts {
		f := float64(n) * inv
		e -= f * math.Log2(f)
	}
	return e
}
