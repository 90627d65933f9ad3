package zhdict

import (
	_ "embed"
	"math"
	"sync"
	"unicode/utf8"

	"dshmem/sqlstore/wordfreq"
)

//go:embed words.txt.gz
var raw []byte

type table struct {
	words   *wordfreq.Table
	lnTotal float64          // ln Σ counts
	chars   map[rune]float64 // char → ln(share of character occurrences)
	floor   float64          // ln p of an unknown single character
	maxLen  int              // longest word, in runes
}

var (
	once sync.Once
	tab  table
)

func get() *table {
	once.Do(func() {
		words, err := wordfreq.Parse(raw)
		if err != nil {
			panic("zhdict: embedded words.txt.gz: " + err.Error()) // a broken build, caught by the tests
		}
		tab.words, tab.lnTotal = words, math.Log(words.Total())
		counts := map[rune]float64{}
		var charTotal float64
		words.Each(func(w []byte, n float64) {
			k := 0
			for _, r := range string(w) {
				counts[r] += n
				charTotal += n
				k++
			}
			tab.maxLen = max(tab.maxLen, k)
		})
		tab.chars = make(map[rune]float64, len(counts))
		for r, n := range counts {
			tab.chars[r] = math.Log(n / charTotal)
		}
		tab.floor = math.Log(0.5) - tab.lnTotal
	})
	return &tab
}

// Load reads the table now rather than on first use: a server calls it
// at start so that no recall waits for it. It returns the number of
// dictionary words.
func Load() int { return get().words.Len() }

// logp is ln p(w) of a dictionary word, and false for any other text.
func (t *table) logp(w []byte) (float64, bool) {
	n, ok := t.words.Count(w)
	if !ok {
		return 0, false
	}
	return math.Log(n) - t.lnTotal, true
}

// WordInfo is −ln p(w) of a dictionary word (its self-information: a
// background idf), and false when w is not in the dictionary.
func WordInfo(w string) (float64, bool) {
	lp, ok := get().logp([]byte(w))
	return -lp, ok
}

// CharInfo is −ln of the share of r among the characters of the
// dictionary's text, and false when r never occurs.
func CharInfo(r rune) (float64, bool) {
	lp, ok := get().chars[r]
	return -lp, ok
}

// Segment splits a run of Han characters into the most probable
// sequence of dictionary words (unigram model, as jieba without its HMM
// for unknown words): characters no word covers stand alone.
func Segment(run []rune) []string {
	t := get()
	n := len(run)
	if n == 0 {
		return nil
	}
	best := make([]float64, n+1)
	next := make([]int, n+1)
	var key []byte
	for i := n - 1; i >= 0; i-- {
		best[i] = math.Inf(-1)
		key = key[:0]
		for l := 1; l <= t.maxLen && i+l <= n; l++ {
			key = utf8.AppendRune(key, run[i+l-1])
			lp, ok := t.logp(key)
			if !ok {
				if l > 1 {
					continue
				}
				lp = t.floor
			}
			if s := lp + best[i+l]; s > best[i] {
				best[i], next[i] = s, i+l
			}
		}
	}
	out := make([]string, 0, n)
	for i := 0; i < n; i = next[i] {
		out = append(out, string(run[i:next[i]]))
	}
	return out
}
