package sqlstore

import (
	"math"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"dshmem/sqlstore/enfreq"
	"dshmem/sqlstore/tokenize"
	"dshmem/sqlstore/zhdict"
)

// This file is the Go half of ranking: it reads a query into weighted
// terms and scores documents against it. It touches no database; the
// stages that feed it are in recall.go. See Weights for the formula.

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

// doc is one candidate, tokenized. Only what the selected query terms
// can use is kept: counts of query tokens, stems and characters (by slot,
// see analysis.slots), the fields holding them, adjacent pairs of query
// tokens.
type doc struct {
	dl         int
	tf         []int32   // by qterm.idx
	stemTF     []int32   // by qterm.sidx
	fields     []uint8   // by qterm.idx: inTitle|inTags|inTerms
	stemFields []uint8   // by qterm.sidx
	pairs      []bool    // by pair slot; nil when none is held
	chars      []int32   // by query character slot; nil when none is held
	cl         int       // Chinese characters in all
	words      []int32   // by query word slot; nil when none is held
	wl         int       // Chinese words in all
	seqs       [][]int32 // token sequences of the fields as analysis.seqID ids (−1: not a query token), for the phrase feature
	title      string    // title and body, for the substring feature
	body       string
}

// Fields a query token or stem was found in (doc.fields).
const (
	inTitle uint8 = 1 << iota
	inTags
	inTerms
)

// slots numbers the selected terms, their stems, the query characters
// and the pairs of selected terms, once per query: documents count into
// slices by these numbers instead of maps.
func (a *analysis) slots() {
	a.want = make(map[string]int, len(a.sel))
	a.stemIdx = map[string]int{}
	a.stemOf = map[string]int{}
	for i, q := range a.sel {
		q.idx, q.sidx = i, -1
		a.want[q.term] = i
		if q.stem != "" {
			j, ok := a.stemIdx[q.stem]
			if !ok {
				j = len(a.stemIdx)
				a.stemIdx[q.stem] = j
			}
			q.sidx = j
		}
	}
	a.nterms = len(a.sel)
	a.charIdx = make(map[rune]int, len(a.chars))
	for r := range a.chars {
		a.charIdx[r] = len(a.charIdx)
	}
	a.wordIdx = make(map[string]int, len(a.words))
	for wd := range a.words {
		a.wordIdx[wd] = len(a.wordIdx)
	}
	a.pairIdx = map[[2]int]int{}
	for p, pw := range a.pairs {
		i, ok1 := a.want[p.a]
		j, ok2 := a.want[p.b]
		if !ok1 || !ok2 {
			continue
		}
		a.pairIdx[[2]int{i, j}] = len(a.pairW)
		a.pairW = append(a.pairW, pw)
		a.pairQ = append(a.pairQ, [2]*qterm{a.sel[i], a.sel[j]})
	}
}

// stemSlot returns the slot of t's stem when that stem is selected, else
// -1; it remembers each token's answer for the rest of the query.
func (a *analysis) stemSlot(tok []byte) int {
	if j, ok := a.stemOf[string(tok)]; ok {
		return j
	}
	t := string(tok)
	j := -1
	if st := stem(t); st != "" {
		if k, ok := a.stemIdx[st]; ok {
			j = k
		}
	}
	a.stemOf[t] = j
	return j
}

// newDoc tokenizes the fields of a candidate. Call after selectTerms.
func (a *analysis) newDoc(title, body, tags, terms string) *doc {
	if a.want == nil {
		a.slots()
	}
	// One allocation holds the counts of terms and stems.
	ns := len(a.stemIdx)
	counts := make([]int32, a.nterms+ns)
	flags := make([]uint8, a.nterms+ns)
	d := &doc{tf: counts[:a.nterms:a.nterms], stemTF: counts[a.nterms:], fields: flags[:a.nterms:a.nterms], stemFields: flags[a.nterms:]}
	field := func(s string, bit uint8) {
		if s == "" {
			return
		}
		if len(a.chars) > 0 {
			for _, r := range s {
				if isHan(r) {
					d.cl++
					if ci, ok := a.charIdx[r]; ok {
						if d.chars == nil {
							d.chars = make([]int32, len(a.charIdx))
						}
						d.chars[ci]++
					}
				}
			}
		}
		if len(a.words) > 0 {
			for _, wd := range docWords.tokens(s) {
				d.wl++
				if wi, ok := a.wordIdx[wd]; ok {
					if d.words == nil {
						d.words = make([]int32, len(a.wordIdx))
					}
					d.words[wi]++
				}
			}
		}
		var seq []int32
		prev := -1
		a.scan.Scan(s, func(tok []byte) {
			d.dl++
			i, hit := a.want[string(tok)]
			if a.seq != nil {
				id, ok := a.seqID[string(tok)]
				if !ok {
					id = -1
				}
				seq = append(seq, id)
			}
			if ns > 0 && len(tok) >= 5 && tok[0] >= 'a' && tok[0] <= 'z' {
				if sj := a.stemSlot(tok); sj >= 0 {
					d.stemTF[sj]++
					d.stemFields[sj] |= bit
				}
			}
			if !hit {
				prev = -1
				return
			}
			d.tf[i]++
			d.fields[i] |= bit
			if prev >= 0 && len(a.pairIdx) > 0 {
				if k, ok := a.pairIdx[[2]int{prev, i}]; ok {
					if d.pairs == nil {
						d.pairs = make([]bool, len(a.pairW))
					}
					d.pairs[k] = true
				}
			}
			prev = i
		})
		if a.seq != nil {
			d.seqs = append(d.seqs, seq)
		}
	}
	field(title, inTitle)
	field(body, 0)
	field(tags, inTags)
	field(terms, inTerms)
	if a.norm != "" {
		d.title, d.body = title, body
	}
	return d
}

// docWords memoizes the Chinese dictionary words of candidate fields by
// their text: segmenting costs more than tokenizing, and the same
// memories come back query after query. Keyed by content, it is never
// stale. The slices it returns are shared: read them, never write them.
var docWords = &tokenMemo{cur: map[string][]string{}, fn: hanWordsAll}

// tokenMemoBytes bounds each of the memo's two generations (text and
// tokens, roughly): when the current one is full it becomes the old one,
// the old one is dropped, and a hit in the old one moves to the current.
// Longer texts than tokenMemoMaxText are not kept.
const (
	tokenMemoBytes   = 4 << 20
	tokenMemoMaxText = 16 << 10
)

type tokenMemo struct {
	mu       sync.Mutex
	cur, old map[string][]string
	bytes    int // of cur
	fn       func(string) []string
}

func (m *tokenMemo) tokens(s string) []string {
	if len(s) > tokenMemoMaxText {
		return m.fn(s)
	}
	m.mu.Lock()
	toks, ok := m.cur[s]
	if !ok {
		if toks, ok = m.old[s]; ok {
			m.keep(s, toks)
		}
	}
	m.mu.Unlock()
	if ok {
		return toks
	}
	toks = m.fn(s)
	m.mu.Lock()
	m.keep(s, toks)
	m.mu.Unlock()
	return toks
}

// keep adds s to the current generation; m.mu is held.
func (m *tokenMemo) keep(s string, toks []string) {
	n := 2*len(s) + 16*len(toks) + 64
	if m.bytes+n > tokenMemoBytes {
		m.old, m.cur, m.bytes = m.cur, make(map[string][]string, len(m.cur)), 0
	}
	m.cur[s] = toks
	m.bytes += n
}

// features are a document's lexical features, each a share of the query.
type features struct {
	BM25, Coverage, Title, Tags, Terms, Pairs, Phrase, Substring, Chars, Words float64
	matchedIDF                                                                 float64
}

func (f *features) lexical(w *Weights) float64 {
	return w.BM25*f.BM25 + w.Coverage*f.Coverage + w.Title*f.Title + w.Tags*f.Tags +
		w.Terms*f.Terms + w.Pairs*f.Pairs + w.Phrase*f.Phrase + w.Substring*f.Substring + w.Chars*f.Chars + w.Words*f.Words
}

// score computes d's features; avgdl is the mean length of the scored
// documents.
func (a *analysis) score(d *doc, avgdl, avgcl, avgwl float64, w *Weights) features {
	var f features
	if a.mass <= 0 {
		return f
	}
	lenNorm := w.K1 * (1 - w.B + w.B*float64(d.dl)/max(avgdl, 1))
	for _, q := range a.sel {
		exact := float64(d.tf[q.idx])
		tf := exact
		fields := d.fields[q.idx]
		if q.sidx >= 0 {
			tf += w.StemMatch * (float64(d.stemTF[q.sidx]) - exact)
			fields |= d.stemFields[q.sidx]
		}
		if tf <= 0 {
			continue
		}
		wt := q.qw * q.idf
		credit := 1.0
		if exact == 0 {
			credit = w.StemMatch
		}
		f.Coverage += credit * wt
		f.matchedIDF += credit * q.idf
		f.BM25 += wt * tf * (w.K1 + 1) / (tf + lenNorm)
		if fields&inTitle != 0 {
			f.Title += wt
		}
		if fields&inTags != 0 {
			f.Tags += wt
		}
		if fields&inTerms != 0 {
			f.Terms += wt
		}
	}
	f.BM25 /= a.mass
	f.Coverage /= a.mass
	f.Title /= a.mass
	f.Tags /= a.mass
	f.Terms /= a.mass
	if a.pairMass > 0 {
		if d.pairs != nil {
			for _, k := range a.livePairs {
				if d.pairs[k] {
					f.Pairs += a.pairW[k] * min(a.pairQ[k][0].idf, a.pairQ[k][1].idf)
				}
			}
		}
		f.Pairs /= a.pairMass
	}
	if a.charMass > 0 && d.cl > 0 {
		norm := w.K1 * (1 - w.B + w.B*float64(d.cl)/max(avgcl, 1))
		for r, id := range a.charIDF {
			if d.chars == nil {
				break
			}
			if tf := float64(d.chars[a.charIdx[r]]); tf > 0 {
				f.Chars += a.chars[r] * id * tf * (w.K1 + 1) / (tf + norm)
			}
		}
		f.Chars *= a.hanShare / a.charMass
	}
	if a.wordMass > 0 && d.words != nil {
		norm := w.K1 * (1 - w.B + w.B*float64(d.wl)/max(avgwl, 1))
		for wd, id := range a.wordIDF {
			if tf := float64(d.words[a.wordIdx[wd]]); tf > 0 {
				f.Words += a.words[wd] * id * tf * (w.K1 + 1) / (tf + norm)
			}
		}
		f.Words *= a.hanShare / a.wordMass
	}
	if a.seq != nil {
		for _, s := range d.seqs {
			if containsSeq(s, a.seqIs) {
				f.Phrase = 1
				break
			}
		}
	}
	// Normalizing costs more than the rest of scoring: only for
	// documents holding every query term.
	if a.norm != "" && f.Coverage > 0.999 && strings.Contains(normalizeText(d.title+"\n"+d.body), a.norm) {
		f.Substring = 1
	}
	return f
}

func containsSeq(s, sub []int32) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		ok := true
		for j := range sub {
			if s[i+j] != sub[j] {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
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
