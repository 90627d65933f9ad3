package distill

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Lexical memory and feedback (issue 16): the words a user uses for
// things ("PG" for PostgreSQL, a service's nickname), and the short
// replies that confirm or correct what the agent just said. Both are
// rules over one message a person typed; the checkpoint's evidence
// pass (observer/checkpoint/evidence.go) turns them into ops. An alias is
// never an entry: it expands recall queries of its scope.

// Alias is one alias a message teaches: Alias is the user's word for
// Expansion, Quote the words it was read from.
type Alias struct {
	Alias, Expansion, Quote string
}

// Bounds of an alias's two sides (runes).
const (
	maxAliasRunes     = 24
	maxExpansionRunes = 48
)

// aliasRule reads one phrasing; short and long are the submatch indexes
// of the alias and of what it stands for. abbrev: the short side must
// look like an abbreviation (ASCII, at most 8 characters, holding an
// upper-case letter or a digit: PG, k8s, CI), because the phrasing also
// reads ordinary statements ("the problem is the cache").
type aliasRule struct {
	re          *regexp.Regexp
	short, long int
	abbrev      bool
}

var aliasRules = []aliasRule{
	// PG is short for PostgreSQL / PG stands for PostgreSQL / by PG I mean PostgreSQL
	{regexp.MustCompile(`(?i)\b([A-Za-z][A-Za-z0-9.+-]{0,15})\s+(?:is short for|stands for|is an? (?:abbreviation|nickname) for|is our name for)\s+(.+)`), 1, 2, false},
	{regexp.MustCompile(`(?i)\bby\s+"?([A-Za-z][A-Za-z0-9.+-]{0,15})"?\s+i mean\s+(.+)`), 1, 2, false},
	// when I say PG I mean PostgreSQL
	{regexp.MustCompile(`(?i)\bwhen i say\s+"?([A-Za-z][A-Za-z0-9.+-]{0,15})"?,?\s+i mean\s+(.+)`), 1, 2, false},
	// we call the billing service "Ledger"
	{regexp.MustCompile(`(?i)\bwe call\s+(?:the\s+)?(.+?)\s+"([^"]{1,24})"`), 2, 1, false},
	// PG 就是 PostgreSQL / PG 指的是 PostgreSQL / PG 即 PostgreSQL (never "=": KEY=value is config)
	{regexp.MustCompile(`([A-Za-z][A-Za-z0-9.+-]{0,7})\s*(?:就是|指的是|说的是|即)\s*(.+)`), 1, 2, true},
	// PG 是 PostgreSQL 的简称 / 缩写
	{regexp.MustCompile(`(\S{1,16}?)\s*是\s*(.+?)\s*的(?:简称|缩写|别名)`), 1, 2, false},
	// PostgreSQL 简称 PG / PostgreSQL，简称 PG / 也叫 / 又叫
	{regexp.MustCompile(`(.+?)[，,]?\s*(?:简称|也叫|又叫|又称)\s*(.+)`), 2, 1, false},
	// 咱们那个 billing 服务叫 账单中心 / 我们管 billing 服务叫 账单中心
	{regexp.MustCompile(`(?:咱们|我们)(?:那个|的|管)\s*(.+?)\s*叫(?:做|作)?\s*(.+)`), 2, 1, false},
}

// aliasCut ends an alias's sides: the rest of a clause.
var aliasCut = regexp.MustCompile(`[,，。.!！?？;；:：()（）\n]|\s(?:and|but|so|which|because)\s|(?:，|,)?(?:所以|但是|因为)`)

// Aliases returns the aliases text teaches, in the order of the rules.
// A question, a hypothetical or a negated phrasing teaches none.
func Aliases(text string) []Alias {
	t := strings.TrimSpace(text)
	if t == "" || utf8.RuneCountInString(t) > 400 || strings.ContainsAny(t, "?？") || strings.Contains(t, "```") {
		return nil
	}
	low := strings.ToLower(t)
	for _, w := range []string{"如果", "假如", "要是", "不是", "不叫", "what if", "if we", "suppose", "isn't", "is not", "doesn't", "not short for"} {
		if strings.Contains(low, w) {
			return nil
		}
	}
	var out []Alias
	seen := map[string]bool{}
	for _, r := range aliasRules {
		m := r.re.FindStringSubmatchIndex(t)
		if m == nil {
			continue
		}
		short := cleanAliasSide(t[m[2*r.short]:m[2*r.short+1]], true)
		long := cleanAliasSide(t[m[2*r.long]:m[2*r.long+1]], false)
		if !plausibleAlias(short, long, r.abbrev) {
			continue
		}
		key := strings.ToLower(short) + "\x00" + strings.ToLower(long)
		if seen[key] {
			continue
		}
		seen[key] = true
		// The quote runs to the end of the clause that holds the later
		// side ("PG 是 PostgreSQL 的简称"), not into the next one.
		end := m[0]
		for _, g := range [][3]int{{m[2*r.short], m[2*r.short+1], 0}, {m[2*r.long], m[2*r.long+1], 1}} {
			side := short
			if g[2] == 1 {
				side = long
			}
			if i := strings.Index(t[g[0]:g[1]], side); i >= 0 {
				end = max(end, g[0]+i+len(side))
			}
		}
		if loc := aliasCut.FindStringIndex(t[end:m[1]]); loc != nil {
			end += loc[0]
		} else {
			end = m[1]
		}
		out = append(out, Alias{Alias: short, Expansion: long, Quote: strings.TrimSpace(t[m[0]:end])})
	}
	return out
}

// cleanAliasSide trims a side to its clause, quotes and filler words.
func cleanAliasSide(s string, short bool) string {
	if !short {
		if loc := aliasCut.FindStringIndex(s); loc != nil {
			s = s[:loc[0]]
		}
	} else {
		s = strings.TrimRight(s, ",，。.!！;；:： ")
		if i := strings.LastIndexAny(s, ",，。;；:："); i >= 0 {
			_, size := utf8.DecodeRuneInString(s[i:])
			s = s[i+size:]
		}
	}
	s = strings.Trim(strings.TrimSpace(s), `"'“”‘’「」`)
	for _, p := range []string{"那个", "这个", "the ", "our "} {
		s = strings.TrimPrefix(s, p)
	}
	for _, p := range []string{"了", "啊", "哈", "吧"} {
		s = strings.TrimSuffix(s, p)
	}
	return strings.TrimSpace(s)
}

func plausibleAlias(short, long string, abbrev bool) bool {
	ns, nl := utf8.RuneCountInString(short), utf8.RuneCountInString(long)
	if ns == 0 || nl == 0 || ns > maxAliasRunes || nl > maxExpansionRunes || strings.EqualFold(short, long) {
		return false
	}
	if abbrev {
		if ns > 8 {
			return false
		}
		hasMark := false
		for _, c := range short {
			if c > unicode.MaxASCII {
				return false
			}
			hasMark = hasMark || unicode.IsUpper(c) || unicode.IsDigit(c)
		}
		if !hasMark {
			return false
		}
	}
	// A side that is a whole sentence is no name.
	return len(strings.Fields(long)) <= 5 && len(strings.Fields(short)) <= 3
}

// Confirmation and correction replies. A reply is read only when it is
// short and opens with one of these (after case folding): "yes, that's
// right", "对，没错". A question is neither.
var (
	confirmWords = []string{"yes", "yep", "yeah", "correct", "exactly", "right", "that's right", "that is right",
		"that's correct", "that works", "it works", "works now", "perfect", "confirmed",
		"对", "没错", "是的", "正确", "可以了", "好了", "成功了", "行了"}
	correctWords = []string{"no,", "no.", "no ", "nope", "wrong", "that's wrong", "that is wrong", "that's not right",
		"that is not right", "incorrect", "not quite", "不对", "错了", "不是这样", "不是的", "不行"}
)

// Feedback kinds of a reply (Feedback).
const (
	FeedbackNone       = ""
	FeedbackConfirm    = "confirm"
	FeedbackCorrection = "correct"
)

// Feedback reads a message a person typed as an explicit confirmation or
// correction of what the agent just said, or neither.
func Feedback(text string) string {
	t := strings.ToLower(strings.TrimSpace(text))
	if t == "" || strings.ContainsAny(t, "?？") || strings.HasSuffix(t, "/s") {
		return FeedbackNone // a question, or sarcasm marked as such
	}
	n := utf8.RuneCountInString(t)
	for _, w := range correctWords {
		if strings.HasPrefix(t, w) && n <= 200 {
			return FeedbackCorrection
		}
	}
	if n > 40 || t == "no" || t == "不" {
		if t == "no" || t == "不" {
			return FeedbackCorrection
		}
		return FeedbackNone
	}
	for _, w := range confirmWords {
		if !strings.HasPrefix(t, w) {
			continue
		}
		rest := t[len(w):]
		// "对不起" (sorry), "correctly", "rightly", "yesterday" are no confirmation.
		if strings.HasPrefix(rest, "不") || (rest != "" && isWordByte(rest[0])) {
			continue
		}
		return FeedbackConfirm
	}
	return FeedbackNone
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '\''
}
