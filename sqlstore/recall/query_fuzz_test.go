package recall

import (
	"math"
	"testing"
	"unicode/utf8"
)

// FuzzQuery: any query text is analysed without a panic; every term is
// valid UTF-8 and non-empty, its weight finite and positive, and the
// terms are distinct.
func FuzzQuery(f *testing.F) {
	for _, s := range []string{"", "数据库用的是 MySQL 8", "parseConfig in internal/config", "a\nb\n\nc", "\xff\xfe", "ЁЁЁ 🙂 x-y_z", "不是 MySQL，而是 PostgreSQL 16"} {
		f.Add(s)
	}
	w := DefaultWeights
	f.Fuzz(func(t *testing.T, text string) {
		a := analyzeQuery(text, &w)
		seen := map[string]bool{}
		for _, q := range a.terms {
			if q.term == "" || !utf8.ValidString(q.term) {
				t.Fatalf("term %q from %q", q.term, text)
			}
			if seen[q.term] {
				t.Fatalf("term %q twice from %q", q.term, text)
			}
			seen[q.term] = true
			if a.byTerm[q.term] != q {
				t.Fatalf("term %q not indexed", q.term)
			}
		}
		for p, v := range a.pairs {
			if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
				t.Fatalf("pair %v weight %v from %q", p, v, text)
			}
		}
	})
}
