package zhdict

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"math"
	"strconv"
	"strings"
	"sync"
)

//go:embed words.txt.gz
var raw []byte

type table struct {
	logp   map[string]float64 // word → ln(count/total)
	chars  map[rune]float64   // char → ln(share of character occurrences)
	floor  float64            // ln p of an unknown single character
	maxLen int                // in runes
	total  float64
}

var (
	once sync.Once
	tab  *table
)

func get() *table {
	once.Do(func() {
		t := &table{logp: map[string]float64{}, chars: map[rune]float64{}}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			tab = t
			return
		}
		counts := map[string]float64{}
		charCounts := map[rune]float64{}
		var charTotal float64
		sc := bufio.NewScanner(zr)
		for sc.Scan() {
			w, c, ok := strings.Cut(sc.Text(), " ")
			if !ok {
				continue
			}
			n, err := strconv.ParseFloat(c, 64)
			if err != nil || n <= 0 {
				continue
			}
			counts[w] += n
			t.total += n
			k := 0
			for _, r := range w {
				charCounts[r] += n
				charTotal += n
				k++
			}
			t.maxLen = max(t.maxLen, k)
		}
		for w, n := range counts {
			t.logp[w] = math.Log(n / t.total)
		}
		for r, n := range charCounts {
			t.chars[r] = math.Log(n / charTotal)
		}
		t.floor = math.Log(0.5 / t.total)
		tab = t
	})
	return tab
}

// Load reads the table now rather than on first use (about 60 ms): a
// server calls it at start so that no recall waits for it. It returns
// the number of dictionary words.
func Load() int { return len(get().logp) }

// Known reports whether w is a dictionary word.
func Known(w string) bool {
	_, ok := get().logp[w]
	return ok
}

// WordInfo is −ln p(w) of a dictionary word (its self-information: a
// background idf), and false when w is not in the dictionary.
func WordInfo(w string) (float64, bool) {
	lp, ok := get().logp[w]
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
	for i := n - 1; i >= 0; i-- {
		best[i] = math.Inf(-1)
		for l := 1; l <= t.maxLen && i+l <= n; l++ {
			lp, ok := t.logp[string(run[i:i+l])]
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
