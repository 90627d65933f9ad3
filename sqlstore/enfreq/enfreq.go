package enfreq

import (
	_ "embed"
	"math"
	"sync"

	"dshmem/sqlstore/wordfreq"
)

//go:embed words.txt.gz
var raw []byte

var (
	once    sync.Once
	words   *wordfreq.Table
	lnTotal float64 // ln Σ counts: the information of a word seen once
)

func get() *wordfreq.Table {
	once.Do(func() {
		var err error
		words, err = wordfreq.Parse(raw)
		if err != nil {
			panic("enfreq: embedded words.txt.gz: " + err.Error()) // a broken build, caught by the tests
		}
		lnTotal = math.Log(words.Total())
	})
	return words
}

// Load reads the table now rather than on first use; it returns the
// number of words.
func Load() int { return get().Len() }

// WordInfo is −ln p(w) of a lower-case English word in everyday English
// (its self-information: a background idf). A word the table does not
// hold gets the information of a word seen once, and false.
func WordInfo(w string) (float64, bool) {
	t := get()
	if n, ok := t.Count([]byte(w)); ok {
		return lnTotal - math.Log(n), true
	}
	return lnTotal, false
}
