package recall

import (
	"strings"
	"sync"
)

// This file tokenizes the candidates against an analysed query and
// computes their lexical features (see Weights for the formula).

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
