package enfreq

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
	info    map[string]float64 // word → −ln p(word)
	unknown float64            // −ln p of a word seen once
}

var (
	once sync.Once
	tab  table
)

func get() *table {
	once.Do(func() {
		counts := map[string]float64{}
		var total float64
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			panic("enfreq: embedded words.txt.gz: " + err.Error()) // a broken build, caught by the tests
		}
		sc := bufio.NewScanner(zr)
		for sc.Scan() {
			w, c, ok := strings.Cut(sc.Text(), " ")
			n, err := strconv.ParseFloat(c, 64)
			if !ok || err != nil || n <= 0 {
				continue
			}
			counts[w] += n
			total += n
		}
		tab.info = make(map[string]float64, len(counts))
		for w, n := range counts {
			tab.info[w] = -math.Log(n / total)
		}
		tab.unknown = math.Log(total)
	})
	return &tab
}

// Load reads the table now rather than on first use; it returns the
// number of words.
func Load() int { return len(get().info) }

// WordInfo is −ln p(w) of a lower-case English word in everyday English
// (its self-information: a background idf). A word the table does not
// hold gets the information of a word seen once, and false.
func WordInfo(w string) (float64, bool) {
	t := get()
	if v, ok := t.info[w]; ok {
		return v, true
	}
	return t.unknown, false
}
