package distill

import (
	"regexp"
	"slices"
	"strings"
	"unicode"

	"dshmem/sqlstore/tokenize"
)

// findCorrected returns the active related entries a correction aims at,
// best first, with the words of each that the correction replaces, and
// whether those are verbatim text of the entry (a supersede needs one
// entry and verbatim words; anything else is a conflict).
//
// With the old thing named (oldText): the entries holding it verbatim
// (case-insensitively; the quote keeps the entry's spelling); else the
// one entry holding a version or number of it verbatim ("18" of "Node
// 18"); else, when the old words may name what changed rather than its old
// value (oldIsSlot: "日志" in "日志改成 Loki 了"), the one entry sharing the
// most terms with them; else the entries sharing the most terms with it
// (not verbatim). Without it ("改用 PostgreSQL"), or when nothing was
// found for a slot: the entries naming a sibling of the new thing in the
// alternatives table (MySQL for PostgreSQL, npm for pnpm) and not the new
// thing itself; failing that, with slotFallback, the one entry sharing the
// most terms with the statement (or, when the statement holds no word
// but its new value, with the assistant's message before it) that lacks
// the statement's new value.
func findCorrected(req Request, m Message, s, oldText, newText string, p pattern) (targets []Entry, quotes []string, verbatim bool) {
	active := activeEntries(req.Related)
	if oldText != "" {
		for _, e := range active {
			if q := findFoldIn(e, oldText); q != "" {
				targets, quotes = append(targets, e), append(quotes, q)
			}
		}
		if len(targets) > 1 {
			// Several hold the old words: the one the rest of the
			// statement is about ("the shop database is not MySQL"),
			// when only one is.
			rest := subtract(contentTerms(s, nil), append(tokenize.Terms(oldText), tokenize.Terms(newText)...))
			if e, ok := uniqueBest(targets, rest, nil); ok {
				q := findFoldIn(e, oldText)
				if p.oldIsSlot {
					q = quoteFor(e, s, newText)
				}
				return []Entry{e}, []string{q}, true
			}
			if p.oldIsSlot {
				if e, ok := slotTarget(targets, contentTerms(s, nil), valueTokens(s)); ok {
					return []Entry{e}, []string{quoteFor(e, s, newText)}, true
				}
			}
		}
		if len(targets) > 0 {
			return targets, quotes, true
		}
		if e, q, ok := numberHeld(active, oldText); ok {
			return []Entry{e}, []string{q}, true
		}
		if p.oldIsSlot {
			if e, ok := uniqueBest(active, contentTerms(oldText, nil), nil); ok {
				return []Entry{e}, []string{quoteFor(e, s, newText)}, true
			}
		} else {
			oldTerms := tokenize.Terms(oldText)
			best := 0
			for _, e := range active {
				n := overlap(oldTerms, tokenize.Terms(entryText(e)))
				switch {
				case n == 0 || n < best:
				case n > best:
					best, targets = n, []Entry{e}
				default:
					targets = append(targets, e)
				}
			}
			return targets, nil, false
		}
	}
	newTerms := tokenize.Terms(newText)
	siblings, own := alternativesOf(newTerms), aliasesOf(newTerms)
	for _, e := range active {
		terms := tokenize.Terms(entryText(e))
		if overlap(terms, own) > 0 {
			continue // already names the new thing
		}
		for _, sib := range siblings {
			if overlap(terms, []string{sib}) == 0 {
				continue
			}
			if q := findFoldIn(e, sib); q != "" {
				targets, quotes = append(targets, e), append(quotes, q)
				break
			}
		}
	}
	if p.newGroup == 0 && len(targets) > 0 {
		// Only a marker ("actually", "now", "其实") says this corrects
		// anything, and the whole statement stands for the new thing: a
		// sibling named in passing ("the MySQL slow log is now attached")
		// is no correction of the PostgreSQL entry. The entry must share
		// what the statement is about, or the assistant must just have
		// used the old value.
		targets, quotes = aboutTheSame(req, m, s, targets, quotes)
	}
	if len(targets) > 0 || !p.slotFallback {
		return targets, quotes, len(targets) > 0
	}
	values := valueTokens(s)
	if len(values) == 0 {
		if p.weakCue {
			return nil, nil, false
		}
		// A marked correction without a name or number ("that's no
		// longer true, timestamps are stored as local time"): the entry
		// must share two terms with it and lack one of its own.
		if e, ok := wordsTarget(active, contentTerms(s, nil)); ok {
			return []Entry{e}, []string{quoteFor(e, s, newText)}, true
		}
		return nil, nil, false
	}
	if e, ok := slotTarget(active, contentTerms(s, nil), values); ok {
		return []Entry{e}, []string{quoteFor(e, s, newText)}, true
	}
	if prev := previousAssistant(req, m); prev != "" {
		terms := append(contentTerms(s, nil), contentTerms(prev, nil)...)
		if e, ok := slotTarget(active, terms, values); ok {
			return []Entry{e}, []string{quoteFor(e, s, newText)}, true
		}
	}
	return nil, nil, false
}

// wordsTarget is the one entry sharing at least two of terms, and more
// than any other, that lacks one of them.
func wordsTarget(active []Entry, terms []string) (Entry, bool) {
	terms = dedupe(terms)
	var best Entry
	bestN, tie := 0, false
	for _, e := range active {
		et := tokenize.Terms(entryText(e))
		n := overlap(terms, et)
		if n < 2 || n == len(terms) {
			continue
		}
		switch {
		case n > bestN:
			best, bestN, tie = e, n, false
		case n == bestN:
			tie = true
		}
	}
	return best, bestN > 0 && !tie
}

// slotTarget finds the entry a correction without its old words is about:
// the one sharing the most of terms, numbers aside (a number is the new
// value, not what the statement is about), that lacks one of the
// statement's values; an entry that holds a number of its own when the
// statement states one scores one more ("Go 1.22" corrects "Go 1.21", not
// "run gofmt on Go code").
func slotTarget(active []Entry, terms, values []string) (Entry, bool) {
	var numbers []string
	for _, v := range values {
		if numberRe.MatchString(v) {
			numbers = append(numbers, tokenize.Terms(numberRe.FindString(v))...)
		}
	}
	terms = dedupe(subtract(subtract(terms, numbers), subTerms(values)))
	var best Entry
	bestN, tie := 0, false
	for _, e := range active {
		lacks := false
		for _, v := range values {
			lacks = lacks || findFoldIn(e, v) == ""
		}
		if !lacks {
			continue
		}
		n := overlap(terms, tokenize.Terms(entryText(e)))
		if n == 0 {
			continue
		}
		if len(numbers) > 0 && numberRe.MatchString(e.Title+" "+e.Content) {
			n++
		}
		switch {
		case n > bestN:
			best, bestN, tie = e, n, false
		case n == bestN:
			tie = true
		}
	}
	return best, bestN > 0 && !tie
}

// aboutTheSame keeps the targets that share a content term with s (its
// names and numbers aside) or whose quoted words the assistant's message
// before m holds.
func aboutTheSame(req Request, m Message, s string, targets []Entry, quotes []string) ([]Entry, []string) {
	subject := subtract(contentTerms(s, nil), termsOf(valueTokens(s)))
	prev := previousAssistant(req, m)
	var keptT []Entry
	var keptQ []string
	for i, e := range targets {
		if overlap(dedupe(subject), tokenize.Terms(entryText(e))) > 0 || findFold(prev, quotes[i]) != "" {
			keptT, keptQ = append(keptT, e), append(keptQ, quotes[i])
		}
	}
	return keptT, keptQ
}

func activeEntries(related []Entry) []Entry {
	var out []Entry
	for _, e := range related {
		if e.active() {
			out = append(out, e)
		}
	}
	return out
}

// heldVerbatim reports whether an active entry holds x (ignoring case).
func heldVerbatim(related []Entry, x string) bool {
	for _, e := range activeEntries(related) {
		if findFoldIn(e, x) != "" {
			return true
		}
	}
	return false
}

// numberHeld finds the one active entry holding a number of x verbatim
// ("18" of "Node 18", "1.21" of "go 1.21").
func numberHeld(active []Entry, x string) (Entry, string, bool) {
	for _, tok := range strings.Fields(x) {
		if !strings.ContainsFunc(tok, unicode.IsDigit) {
			continue
		}
		var found []Entry
		var quote string
		for _, e := range active {
			if q := findFoldIn(e, tok); q != "" {
				found, quote = append(found, e), q
			}
		}
		if len(found) == 1 {
			return found[0], quote, true
		}
	}
	return Entry{}, "", false
}

// uniqueBest returns the entry of entries sharing the most of terms, when
// it shares at least one and no other shares as many; keep, when given,
// must accept it.
func uniqueBest(entries []Entry, terms []string, keep func(Entry) bool) (Entry, bool) {
	var best Entry
	bestN, tie := 0, false
	for _, e := range entries {
		if !e.active() || (keep != nil && !keep(e)) {
			continue
		}
		n := overlap(dedupe(terms), tokenize.Terms(entryText(e)))
		switch {
		case n > bestN:
			best, bestN, tie = e, n, false
		case n == bestN && n > 0:
			tie = true
		}
	}
	return best, bestN > 0 && !tie
}

// quoteFor picks the words of e a correction replaces: a sibling of the
// new thing that e names, else a number of e the statement does not
// hold, else e's title (verbatim, so a supersede's oldQuote holds).
func quoteFor(e Entry, s, newText string) string {
	for _, sib := range alternativesOf(tokenize.Terms(newText + " " + s)) {
		if q := findFoldIn(e, sib); q != "" {
			return q
		}
	}
	for _, f := range []string{e.Title, e.Content} {
		for _, tok := range numberRe.FindAllString(f, -1) {
			if !strings.Contains(s, tok) {
				return tok
			}
		}
	}
	if e.Title != "" {
		return e.Title
	}
	return firstLine(e.Content)
}

var (
	numberRe = regexp.MustCompile(`\d+(?:\.\d+)*`)
	asciiTok = regexp.MustCompile(`[A-Za-z0-9][\w.+/-]*[A-Za-z0-9]|[A-Za-z0-9]`)
	// the new value of a Chinese statement without ASCII: the place or
	// name after 在/是/用/成/到 at its end ("生产环境实际上在深圳").
	zhValueRe = regexp.MustCompile(`(?:在|是|用|成|到|为)\s*(\p{Han}{2,6}?)[了的呢啊吧]*$`)
)

// valueTokens returns the names and numbers a statement states: ASCII
// tokens that hold a digit, a capital after the first word, or one of
// "-_./"; or sit in the alternatives table; every ASCII token of a
// Chinese statement; else the trailing place or name of a Chinese one.
func valueTokens(s string) []string {
	zh := statementLang(s) == "zh"
	var out []string
	for i, tok := range asciiTok.FindAllString(s, -1) {
		lower := strings.ToLower(tok)
		if stopEN[lower] || len(tok) < 2 && !unicode.IsDigit(rune(tok[0])) {
			continue
		}
		upper := i > 0 && strings.ContainsFunc(tok, unicode.IsUpper)
		if zh || upper || strings.ContainsFunc(tok, unicode.IsDigit) || strings.ContainsAny(tok, "-_./") || len(aliasesOf([]string{lower})) > 0 {
			out = append(out, tok)
		}
	}
	if zh && len(out) == 0 {
		if m := zhValueRe.FindStringSubmatch(strings.TrimRight(s, "。！!")); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// previousAssistant is the text of the last assistant message before m.
func previousAssistant(req Request, m Message) string {
	text := ""
	for _, x := range req.Messages {
		if x.Seq < m.Seq && x.Role == RoleAssistant {
			text = x.Text
		}
	}
	return text
}

// contentTerms returns the terms of s that say what it is about: not
// English function words, not Chinese bigrams holding a function
// character, nor those of extra.
func contentTerms(s string, extra map[string]bool) []string {
	var out []string
	for _, t := range tokenize.Terms(s) {
		if stopEN[t] || extra[t] || strings.ContainsFunc(t, func(r rune) bool { return strings.ContainsRune(stopZH, r) }) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// subTerms are the parts tokenize splits a name into besides the name
// itself ("sql" of MySQL, "east" of us-east-1): two names sharing one
// are not about the same thing.
func subTerms(values []string) []string {
	var out []string
	for _, v := range values {
		if t := tokenize.Terms(v); len(t) > 1 {
			out = append(out, t[1:]...)
		}
	}
	return out
}

func termsOf(values []string) []string {
	var out []string
	for _, v := range values {
		out = append(out, tokenize.Terms(v)...)
	}
	return out
}

func subtract(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func dedupe(a []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

var stopEN = wordSet(`a an the is are was were be been being am it its it's this that these those there here
we our us i me my you your they them their he she his her on in at to of for from with by and or but not no
nor now then than so also just really very actually correction hmm wait oh yes yeah ok okay anymore any more
use uses used using run runs running goes went gone through over into onto off about as do does did done
have has had will would should could can may might must shall days these today still new old please thanks
instead rather called call is isn't aren't wasn't don't doesn't didn't dont let let's what which who how when
where why all some one two re ve ll s t d`)

// forgetWords are the words of a forget statement that name the memory
// rather than what it is about.
var forgetWords = wordSet(`forget forgot forgotten delete remove drop erase discard memory memories note notes
entry entries record records said say thing bit part outdated relevant wrong anymore true longer
忘掉 忘了 忘记 删掉 删了 删除 去掉 记忆 记录 那条 这条 可以 不用 没用 不对 已经 不这 这么 要求`)

// stopZH holds the characters that make a Chinese bigram a function
// bigram ("的数", "已经") rather than a word.
const stopZH = "的了是在其实已经现在我们你他她它这那就都也还要把用跑上下里个么吧呢啊吗际应该更正纠一和与及或而被给让从到为对不没有很太再又才只说过着得地啦嘛哦嗯条忘删掉记"

func wordSet(s string) map[string]bool {
	out := make(map[string]bool)
	for _, w := range strings.Fields(s) {
		out[w] = true
	}
	return out
}

// findFoldIn returns the first case-insensitive occurrence of needle in
// e's title, description or content, as e spells it, or "".
func findFoldIn(e Entry, needle string) string {
	for _, hay := range []string{e.Title, e.Description, e.Content} {
		if q := findFold(hay, needle); q != "" {
			return q
		}
	}
	return ""
}

func findFold(hay, needle string) string {
	if needle == "" {
		return ""
	}
	n := len(needle)
	for i := range hay {
		if i+n <= len(hay) && strings.EqualFold(hay[i:i+n], needle) {
			return hay[i : i+n]
		}
	}
	return ""
}

func overlap(a, b []string) int {
	n := 0
	for _, x := range a {
		if slices.Contains(b, x) {
			n++
		}
	}
	return n
}
