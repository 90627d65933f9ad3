package recall

import (
	"math"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"dshmem/sqlstore/enfreq"
	"dshmem/sqlstore/tokenize"
	"dshmem/sqlstore/zhdict"
)

// This file reads a query into weighted terms and fixes their rarity
// (idf); features.go scores documents against it. It touches no
// database; the stages that feed it are in candidates.go. See Weights
// for the formula.

// qterm is one distinct token of the query.
type qterm struct {
	term string
	stem string  // light English stem, "" when the token is not an English word
	qw   float64 // query weight, 0..1 (see Weights.LineDecay)
	pos  float64 // the weight of the latest line holding it, for probe order

	probed  bool
	df      float64 // documents holding the exact term (estimated past PerTermCap)
	exactDF bool    // df is a count, not an estimate
	idf     float64
	stemDF  bool // idf comes from stem matches among the candidates

	// Set by newDoc: the term's slot in doc.tf and doc.fields, and its
	// stem's slot in doc.stemTF and doc.stemFields (-1: no stem selected).
	idx, sidx int
}

type tokPair struct{ a, b string }

// analysis is a query read into terms, before and after the index told
// how rare each term is.
type analysis struct {
	terms  []*qterm // distinct tokens, first-seen order
	byTerm map[string]*qterm
	pairs  map[tokPair]float64 // adjacent tokens within a line → max line weight

	// chars are the query's CJK characters → query weight: a character
	// overlap signal under the bigrams (跳舞 ~ 舞蹈, 表扬 ~ 表彰), its idf
	// taken from the scored documents (finishIDF).
	chars    map[rune]float64
	charIDF  map[rune]float64
	charMass float64

	// words are the query's Chinese dictionary words of two characters
	// or more (zhdict.Segment) → query weight; their idf comes from the
	// scored documents, like chars.
	words    map[string]float64
	wordIDF  map[string]float64
	wordMass float64
	wordIdx  map[string]int
	// hanShare is the share of the query mass held by Chinese terms: the
	// character and word features weigh as much as the Chinese part of
	// a mixed query, not as much as the whole query.
	hanShare float64

	seq   []string         // the whole query's tokens, for the phrase feature (short queries)
	seqID map[string]int32 // distinct tokens of seq → id
	seqIs []int32          // seq as ids

	scan tokenize.Scanner // tokenizes the candidates, reusing its buffers
	norm string           // normalized query text, for the substring feature (short queries)

	// After select:
	want     map[string]int // the selected terms → slot (qterm.idx)
	sel      []*qterm
	selStem  map[string][]*qterm
	mass     float64 // Σ qw·idf over sel
	pairMass float64
	n        float64 // rows in the index searched

	// Slots of the documents' counts, fixed by the first newDoc (sel may
	// shrink later, in finishIDF; slots stay).
	nterms    int
	stemIdx   map[string]int // selected stems → slot
	stemOf    map[string]int // document token → stem slot, or -1 (memo)
	charIdx   map[rune]int   // query characters → slot
	pairIdx   map[[2]int]int // adjacent selected-term slots → pair slot
	pairW     []float64      // pair slot → weight (a.pairs)
	pairQ     [][2]*qterm    // pair slot → its terms
	livePairs []int          // pair slots whose terms are both still selected (finishIDF)
}

// maxPhraseTokens and maxSubstringBytes bound the query size for which
// the phrase and substring features are computed: a pasted dialogue is
// never found verbatim.
const (
	maxPhraseTokens   = 32
	maxSubstringBytes = 256
)

// analyzeQuery splits text into lines, weighs each line by its distance
// from the last one, and gathers the distinct tokens with their query
// weights and the adjacent token pairs.
func analyzeQuery(text string, w *Weights) *analysis {
	a := &analysis{byTerm: map[string]*qterm{}, pairs: map[tokPair]float64{}, chars: map[rune]float64{}, words: map[string]float64{}}
	charSums := map[rune]float64{}
	wordSums := map[string]float64{}
	var lines []string
	for l := range strings.Lines(text) {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	sums := map[string]float64{}
	for i, line := range lines {
		lw := max(math.Pow(w.LineDecay, float64(len(lines)-1-i)), w.MinLineWeight)
		for _, r := range line {
			if isHan(r) {
				charSums[r] += lw
			}
		}
		if w.Words > 0 {
			for _, wd := range hanWords(line) {
				wordSums[wd] += lw
			}
		}
		toks := tokenize.Tokens(line)
		for j, t := range toks {
			q := a.byTerm[t]
			if q == nil {
				q = &qterm{term: t, stem: stem(t)}
				a.byTerm[t] = q
				a.terms = append(a.terms, q)
			}
			sums[t] += lw
			q.pos = max(q.pos, lw)
			if j > 0 && toks[j-1] != t {
				p := tokPair{toks[j-1], t}
				a.pairs[p] = max(a.pairs[p], lw)
			}
		}
	}
	for _, q := range a.terms {
		q.qw = 1 - math.Exp(-sums[q.term])
	}
	a.dropSplitChars(text)
	for r, sum := range charSums {
		a.chars[r] = 1 - math.Exp(-sum)
	}
	for wd, sum := range wordSums {
		a.words[wd] = 1 - math.Exp(-sum)
	}
	if len(text) <= maxSubstringBytes {
		a.norm = normalizeText(text)
		if toks := tokenize.Tokens(text); len(toks) >= 2 && len(toks) <= maxPhraseTokens {
			a.seq, a.seqID = toks, map[string]int32{}
			for _, t := range toks {
				id, ok := a.seqID[t]
				if !ok {
					id = int32(len(a.seqID))
					a.seqID[t] = id
				}
				a.seqIs = append(a.seqIs, id)
			}
		}
	}
	return a
}

// dropSplitChars removes the one-character ASCII parts that splitting
// an identifier leaves (the 'w' and '0' of 'w0c90', the 'k' of
// 'recallTopK') from the query terms: such a part names nothing, yet it
// cost a probe and its postings crowded out real candidates. The whole
// identifier and its longer parts still match. A character written on
// its own ('item 3', 'plan B', 'a') is kept: there it is a word.
func (a *analysis) dropSplitChars(text string) {
	alone := map[string]bool{}
	for i := 0; i < len(text); {
		j := i
		for j < len(text) && isASCIIAlnum(text[j]) {
			j++
		}
		if j == i+1 {
			alone[strings.ToLower(text[i:j])] = true
		}
		i = max(j, i+1)
	}
	split := func(t string) bool { return len(t) == 1 && t[0] < utf8.RuneSelf && !alone[t] }
	kept := a.terms[:0]
	for _, q := range a.terms {
		if split(q.term) {
			delete(a.byTerm, q.term)
			continue
		}
		kept = append(kept, q)
	}
	clear(a.terms[len(kept):])
	a.terms = kept
}

func isASCIIAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// probeOrder returns the terms to look up in the index, at most
// w.MaxProbeTerms: the latest and most repeated first, longer (more
// specific) tokens breaking ties.
func (a *analysis) probeOrder(w *Weights) []*qterm {
	out := append([]*qterm(nil), a.terms...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].pos != out[j].pos {
			return out[i].pos > out[j].pos
		}
		if out[i].qw != out[j].qw {
			return out[i].qw > out[j].qw
		}
		return len(out[i].term) > len(out[j].term)
	})
	return out[:min(len(out), w.MaxProbeTerms)]
}

// idf is the BM25 idf, never negative: ln(1 + (N − df + 0.5)/(df + 0.5)).
func idf(df, n float64) float64 {
	df = min(df, n)
	return math.Log(1 + (n-df+0.5)/(df+0.5))
}

// selectTerms keeps the salient terms: probed, present in the index (or,
// for English words, possibly present as a variant), ranked by qw·idf,
// at most w.MaxQueryTerms.
func (a *analysis) selectTerms(n float64, w *Weights) {
	a.n = max(n, 1)
	var cands []*qterm
	for _, q := range a.terms {
		if !q.probed {
			continue
		}
		switch {
		case q.df > 0:
			q.idf = idf(q.df, a.n)
		case q.stem != "":
			// Absent as spelled; a variant may be there. Provisional
			// rarity until the candidates say (finishIDF).
			q.idf, q.stemDF = idf(a.n/10, a.n), true
		default:
			continue
		}
		q.idf *= bgFactor(q.term, w)
		if q.idf > 0 {
			cands = append(cands, q)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].qw*cands[i].idf > cands[j].qw*cands[j].idf })
	a.sel = cands[:min(len(cands), w.MaxQueryTerms)]
	a.selStem = map[string][]*qterm{}
	for _, q := range a.sel {
		if q.stem != "" {
			a.selStem[q.stem] = append(a.selStem[q.stem], q)
		}
	}
}

// heldIDF is the idf of a feature that held reports for k of the scored
// documents, their share scaled up to the index; false when none holds it.
func (a *analysis) heldIDF(docs []*doc, held func(*doc) bool) (float64, bool) {
	k := 0
	for _, d := range docs {
		if held(d) {
			k++
		}
	}
	if k == 0 {
		return 0, false
	}
	return idf(float64(k)*a.n/float64(max(len(docs), 1)), a.n), true
}

// Typical self-information (−ln p) in general text of a Chinese word and
// of a character: background() leaves an idf as it is at these.
const (
	wordInfoRef = 10
	charInfoRef = 8
)

// background scales idf by (info/ref)^exp, info being the token's
// self-information in general text (zhdict), when the table knows it
// and exp > 0: a word rare in general text weighs more than an everyday
// one that a small index holds as seldom.
func background(idf, info float64, known bool, ref, exp float64) float64 {
	if !known || exp <= 0 {
		return idf
	}
	return idf * math.Pow(info/ref, exp)
}

// finishIDF fixes the idf of terms known only by stem from how many of
// the scored documents hold the stem (scaled up to the index), drops
// terms nothing holds, and computes the query masses.
func (a *analysis) finishIDF(docs []*doc, wb *Weights) {
	kept := a.sel[:0]
	for _, q := range a.sel {
		if q.stemDF {
			v, held := a.heldIDF(docs, func(d *doc) bool { return q.sidx >= 0 && d.stemTF[q.sidx] > 0 })
			if !held {
				continue
			}
			q.idf = v
		}
		kept = append(kept, q)
	}
	a.sel = kept
	a.charIDF, a.charMass = map[rune]float64{}, 0
	for r, qw := range a.chars {
		ci, ok := a.charIdx[r]
		v, held := a.heldIDF(docs, func(d *doc) bool { return ok && d.chars != nil && d.chars[ci] > 0 })
		if !held {
			continue
		}
		info, known := zhdict.CharInfo(r)
		a.charIDF[r] = background(v, info, known, charInfoRef, wb.CharBg)
		a.charMass += qw * a.charIDF[r]
	}
	a.wordIDF, a.wordMass = map[string]float64{}, 0
	for wd, qw := range a.words {
		wi, ok := a.wordIdx[wd]
		v, held := a.heldIDF(docs, func(d *doc) bool { return ok && d.words != nil && d.words[wi] > 0 })
		if !held {
			continue
		}
		info, known := zhdict.WordInfo(wd)
		a.wordIDF[wd] = background(v, info, known, wordInfoRef, wb.WordBg)
		a.wordMass += qw * a.wordIDF[wd]
	}
	a.mass, a.pairMass = 0, 0
	han := 0.0
	inSel := make(map[string]*qterm, len(a.sel))
	for _, q := range a.sel {
		a.mass += q.qw * q.idf
		if r, _ := utf8.DecodeRuneInString(q.term); isHan(r) {
			han += q.qw * q.idf
		}
		inSel[q.term] = q
	}
	a.hanShare = 1
	if a.mass > 0 {
		a.hanShare = han / a.mass
	}
	for p, pw := range a.pairs {
		qa, qb := inSel[p.a], inSel[p.b]
		if qa == nil || qb == nil {
			delete(a.pairs, p)
			continue
		}
		a.pairMass += pw * min(qa.idf, qb.idf)
	}
	a.livePairs = a.livePairs[:0]
	for i, pq := range a.pairQ {
		if inSel[pq[0].term] != nil && inSel[pq[1].term] != nil {
			a.livePairs = append(a.livePairs, i)
		}
	}
}

// isHan reports whether r is a Chinese character (the Japanese and
// Korean scripts are left to bigrams: single kana carry little meaning).
func isHan(r rune) bool {
	return r >= 0x3400 && (0x4E00 <= r && r <= 0x9FFF || unicode.Is(unicode.Han, r))
}

// normalizeText folds case and collapses runs of space and punctuation
// to one space, for the substring feature.
func normalizeText(s string) string {
	var b strings.Builder
	space := true
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsNumber(r) {
			b.WriteRune(unicode.ToLower(r))
			space = false
		} else if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	return strings.TrimSpace(b.String())
}

// stem folds common English inflections so that "dancing", "danced" and
// "dances" meet at "danc". It applies to lowercase ASCII words of five
// letters or more and returns "" otherwise (the token then matches only
// as spelled). It is deliberately light: no dictionary, no Porter rule
// chains; only plural, past, progressive and -ly.
func stem(t string) string {
	if len(t) < 5 {
		return ""
	}
	for i := 0; i < len(t); i++ {
		if t[i] < 'a' || t[i] > 'z' {
			return ""
		}
	}
	s := t
	switch {
	case strings.HasSuffix(s, "ies") && len(s) > 5:
		s = s[:len(s)-3] + "y"
	case strings.HasSuffix(s, "ing") && len(s) >= 6:
		s = undouble(s[:len(s)-3])
	case strings.HasSuffix(s, "ed") && len(s) >= 5:
		s = undouble(s[:len(s)-2])
	case strings.HasSuffix(s, "ly") && len(s) >= 6:
		s = s[:len(s)-2]
	case strings.HasSuffix(s, "sses"):
		s = s[:len(s)-2]
	case strings.HasSuffix(s, "ches") || strings.HasSuffix(s, "shes") || strings.HasSuffix(s, "xes"):
		s = s[:len(s)-2]
	case strings.HasSuffix(s, "s") && !strings.HasSuffix(s, "ss") && !strings.HasSuffix(s, "us") && !strings.HasSuffix(s, "is"):
		s = s[:len(s)-1]
	}
	if strings.HasSuffix(s, "e") && len(s) > 3 {
		s = s[:len(s)-1]
	}
	if strings.HasSuffix(s, "y") && len(s) > 3 {
		s = s[:len(s)-1] + "i"
	}
	return s
}

// undouble drops the doubled final consonant of "runn" (running) and
// "stopp" (stopped), keeping "ll", "ss" and "zz" ("called", "passed").
func undouble(s string) string {
	n := len(s)
	if n >= 3 && s[n-1] == s[n-2] && !strings.ContainsRune("aeiouylsz", rune(s[n-1])) {
		return s[:n-1]
	}
	return s
}

// hanWords returns the dictionary words of two characters or more in
// the runs of Chinese characters of s.
func hanWords(s string) []string {
	var out []string
	for _, wd := range hanWordsAll(s) {
		if len(wd) > 3 {
			out = append(out, wd)
		}
	}
	return out
}

// hanWordsAll segments every run of Chinese characters of s into
// dictionary words (single characters included).
func hanWordsAll(s string) []string {
	var out []string
	var run []rune
	flush := func() {
		if len(run) > 0 {
			out = append(out, zhdict.Segment(run)...)
			run = run[:0]
		}
	}
	for _, r := range s {
		if isHan(r) {
			run = append(run, r)
		} else {
			flush()
		}
	}
	flush()
	return out
}

// isASCIIWord reports whether t is made of ASCII letters only (digits
// and mixed tokens are left alone by the English table).
func isASCIIWord(t string) bool {
	for i := 0; i < len(t); i++ {
		if c := t[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return t != ""
}

// bgFactor scales the idf of a Chinese token by how rare it is in
// general text (Weights.TermBg), of a bigram that is no dictionary word
// by Weights.NonWord, and of an English word by its rarity in spoken
// English (Weights.EnglishBg).
func bgFactor(t string, w *Weights) float64 {
	r, _ := utf8.DecodeRuneInString(t)
	if r < utf8.RuneSelf {
		if w.EnglishBg <= 0 || !isASCIIWord(t) {
			return 1
		}
		// A word general English does not know (an identifier, a name)
		// counts as rare as its rarest word.
		info, _ := enfreq.WordInfo(t)
		return background(1, info, true, wordInfoRef, w.EnglishBg)
	}
	if w.TermBg <= 0 && w.NonWord <= 0 {
		return 1
	}
	if !isHan(r) {
		return 1
	}
	f := 1.0
	info, ok := zhdict.WordInfo(t)
	if !ok && w.NonWord > 0 && utf8.RuneCountInString(t) == 2 {
		f *= w.NonWord
	}
	return background(f, info, ok, wordInfoRef, w.TermBg)
}

// Alias is a user's word for a longer name, learned in one of the
// queried scopes (sqlstore.AliasRow): recall expands a query with it.
type Alias struct{ Alias, Expansion string }

// expandAliases appends, to each line of text that names one side of an
// alias, the other side ("PG 版本" → "PG 版本 PostgreSQL"), so the
// expansion weighs as the line that asked for it. An ASCII side matches
// as a whole word, case aside; any other as a substring. It returns the
// text and "alias → expansion" for each alias used.
func expandAliases(text string, aliases []Alias) (string, []string) {
	if len(aliases) == 0 {
		return text, nil
	}
	var used []string
	var b strings.Builder
	for l := range strings.Lines(text) {
		body := strings.TrimRight(l, "\r\n")
		low := strings.ToLower(body)
		var add []string
		for _, a := range aliases {
			for _, side := range [2][2]string{{a.Alias, a.Expansion}, {a.Expansion, a.Alias}} {
				if namesSide(low, strings.ToLower(side[0])) && !namesSide(low, strings.ToLower(side[1])) &&
					!slices.Contains(add, side[1]) {
					add = append(add, side[1])
					used = append(used, side[0]+" → "+side[1])
				}
			}
		}
		b.WriteString(body)
		for _, x := range add {
			b.WriteString(" " + x)
		}
		b.WriteString(l[len(body):])
	}
	return b.String(), used
}

// namesSide reports whether low (a lower-cased line) holds side: as a
// whole word when side is ASCII, else anywhere.
func namesSide(low, side string) bool {
	if side == "" {
		return false
	}
	ascii := true
	for i := 0; i < len(side); i++ {
		ascii = ascii && side[i] < utf8.RuneSelf
	}
	if !ascii {
		return strings.Contains(low, side)
	}
	for i := 0; ; {
		j := strings.Index(low[i:], side)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(side)
		if (j == 0 || !isASCIIAlnum(low[j-1])) && (end == len(low) || !isASCIIAlnum(low[end])) {
			return true
		}
		i = j + 1
	}
}
