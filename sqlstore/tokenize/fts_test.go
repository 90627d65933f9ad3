package tokenize

import (
	"database/sql"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"
)

// openFTS returns an in-memory database with table raw(body) over the
// original text and table tok(body) over IndexText, both unicode61, and a
// fts5vocab instance table over tok.
func openFTS(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", ":memory:")
	require.NoError(t, err, "open")
	db.SetMaxOpenConns(1) // one connection: ":memory:" is per connection
	t.Cleanup(func() { db.Close() })
	for _, q := range []string{
		`CREATE VIRTUAL TABLE raw USING fts5(body, tokenize='unicode61')`,
		`CREATE VIRTUAL TABLE tok USING fts5(body, tokenize='unicode61')`,
		`CREATE VIRTUAL TABLE tokv USING fts5vocab(tok, instance)`,
	} {
		_, err := db.Exec(q)
		require.NoError(t, err, "%s", q)
	}
	return db
}

func insert(t testing.TB, db *sql.DB, rowid int, text string) {
	t.Helper()
	_, err := db.Exec(`INSERT INTO raw(rowid, body) VALUES(?, ?)`, rowid, text)
	require.NoError(t, err, "insert raw")
	if _, err := db.Exec(`INSERT INTO tok(rowid, body) VALUES(?, ?)`, rowid, IndexText(text)); err != nil {
		t.Fatalf("insert tok: %v", err)
	}
}

func match(t testing.TB, db *sql.DB, table, expr string) []int {
	t.Helper()
	rows, err := db.Query(`SELECT rowid FROM `+table+` WHERE `+table+` MATCH ? ORDER BY rowid`, expr)
	require.NoError(t, err, "match %s %q", table, expr)
	defer rows.Close()
	var ids []int
	for rows.Next() {
		var id int
		require.NoError(t, rows.Scan(&id), "scan")
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err(), "match %s %q", table, expr)
	return ids
}

func TestFTS5RoundTrip(t *testing.T) {
	db := openFTS(t)
	docs := map[int]string{
		1: "我们的记忆注入逻辑需要修复",
		2: "修复DSH的记忆注入问题",
		3: "call parseHTTPRequest from /usr/local/bin/go_build.sh",
		4: "今天天气很好",
		5: "ＤＳＨ　メモリーのテスト",
	}
	for id, text := range docs {
		insert(t, db, id, text)
	}

	t.Run("RawUnicode61MissesTwoCharQuery", func(t *testing.T) {
		// The failure this package exists for: unicode61 keeps the CJK run
		// (and glued ASCII) as one token.
		got := match(t, db, "raw", `"记忆"`)
		assert.Len(t, got, 0, "raw match 记忆 = %v, want none", got)
	})
	const anyTerm, allTerms = false, true
	tests := []struct {
		name  string
		query string
		all   bool
		want  []int
	}{
		{"TwoCharChineseFound", "记忆", anyTerm, []int{1, 2}},
		{"LongerChineseAll", "记忆注入", allTerms, []int{1, 2}},
		{"ChineseAndASCIIAll", "DSH 记忆", allTerms, []int{2}},
		{"FullWidthQueryFindsASCII", "ｄｓｈ", anyTerm, []int{2, 5}},
		{"CamelPart", "request", anyTerm, []int{3}},
		{"SnakePart", "build", anyTerm, []int{3}},
		{"WholePathBySegments", "go_build.sh", anyTerm, []int{3}},
		{"CamelPrefixByParts", "parseHTTP", anyTerm, []int{3}},
		{"CamelSuffixByParts", "HTTPRequest", anyTerm, []int{3}},
		{"LowercaseWholeWordAll", "parsehttprequest", allTerms, []int{3}},
		{"SubpathBySegments", "bin/go_build", anyTerm, []int{3}},
		{"KanaBigram", "メモリ", allTerms, []int{5}},
		{"NoMatch", "逻辑错误", allTerms, nil},
		{"FTSOperatorsAreJustWords", `NOT near OR "call" AND`, anyTerm, []int{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expr := probes(tt.query, tt.all)
			got := match(t, db, "tok", expr)
			assert.True(t, slices.Equal(got, tt.want), "MATCH %s = %v, want %v", expr, got, tt.want)
		})
	}
	t.Run("OneFTSTokenPerToken", func(t *testing.T) {
		for id, text := range docs {
			got, want := ftsTokenCount(t, db, id), len(Tokens(text))
			assert.Equal(t, want, got, "doc %d: unicode61 saw %d tokens, want %d", id, got, want)
		}
	})
}

// probes is what recall matches for query q: each term of Terms(q) as
// Quote(term), joined with OR (a row any probe finds) or, with all, with
// AND (a row holding every term); "" when q has no terms.
func probes(q string, all bool) string {
	terms := Terms(q)
	for i := range terms {
		terms[i] = Quote(terms[i])
	}
	if all {
		return strings.Join(terms, " AND ")
	}
	return strings.Join(terms, " OR ")
}

func ftsTokenCount(t testing.TB, db *sql.DB, rowid int) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM tokv WHERE doc = ?`, rowid).Scan(&n), "count tokens")
	return n
}

// TestClassesAgreeWithUnicode61 checks every rune the tokenizer keeps in a
// token against the linked SQLite: wrapped as "q<r>q", it must stay one
// unicode61 token. It is what derived unicode61Gaps.
func TestClassesAgreeWithUnicode61(t *testing.T) {
	db := openFTS(t)
	var kept []rune
	for r := rune(utf8.RuneSelf); r <= unicode.MaxRune; r++ {
		if c := classOf(r); c == word || c == cjk {
			kept = append(kept, r)
		}
	}
	const batch = 4000
	rowid := 0
	for lo := 0; lo < len(kept); lo += batch {
		hi := min(lo+batch, len(kept))
		var b strings.Builder
		for _, r := range kept[lo:hi] {
			b.WriteString("q")
			b.WriteRune(r)
			b.WriteString("q ")
		}
		rowid++
		_, err := db.Exec(`INSERT INTO tok(rowid, body) VALUES(?, ?)`, rowid, b.String())
		require.NoError(t, err, "insert")
		if got := ftsTokenCount(t, db, rowid); got != hi-lo {
			// Find the culprits for the failure message.
			for _, r := range kept[lo:hi] {
				rowid++
				db.Exec(`INSERT INTO tok(rowid, body) VALUES(?, ?)`, rowid, "q"+string(r)+"q")
				assert.EqualValues(t, 1, ftsTokenCount(t, db, rowid), "U+%04X %q: unicode61 splits it, but the tokenizer keeps it in tokens", r, r)
			}
		}
	}
}

func FuzzTokens(f *testing.F) {
	for _, s := range []string{
		"", "parseHTTPRequest", "/usr/local/bin/go_build.sh", "记忆注入", "我", "修复DSH的记忆",
		"ＤＳＨ　记忆", "os.path.join", "ｶﾞｷﾞ", "한국어 문장", "e\u0301\u0301x", "\xff\xfe", "a\u19b0b",
		"ſΣς\u212a", strings.Repeat("é", 200), "😀!!", "__a__b__", "'@'@x",
	} {
		f.Add(s)
	}
	db := openFTS(f)
	rowid := 0
	var sc Scanner // reused across inputs, as ranking reuses one
	var j Joiner   // and the projector one Joiner
	f.Fuzz(func(t *testing.T, s string) {
		toks := Tokens(s)
		if scanned := scanAll(&sc, s); !slices.Equal(scanned, toks) {
			t.Fatalf("Scanner.Scan(%q) = %q, Tokens = %q", s, scanned, toks)
		}
		if joined, want := j.Terms(s), strings.Join(Terms(s), " "); joined != want {
			t.Fatalf("Joiner.Terms(%q) = %q, want %q", s, joined, want)
		}
		for _, tok := range toks {
			if tok == "" || !utf8.ValidString(tok) || len(tok) > maxToken {
				t.Fatalf("Tokens(%q): bad token %q", s, tok)
			}
			var sawCJK, sawWord bool
			for _, r := range tok {
				if !unicode.IsLetter(r) && !unicode.IsNumber(r) || !indexable(r) {
					t.Fatalf("Tokens(%q): token %q holds %U, which unicode61 may split on", s, tok, r)
				}
				if isCJK(r) {
					sawCJK = true
				} else {
					sawWord = true
				}
			}
			if sawCJK && sawWord {
				t.Fatalf("Tokens(%q): token %q mixes CJK and other letters", s, tok)
			}
		}
		idx := IndexText(s)
		if got := strings.Fields(idx); !slices.Equal(got, toks) {
			t.Fatalf("IndexText(%q) = %q, fields %q, want %q", s, idx, got, toks)
		}
		rowid++
		if _, err := db.Exec(`INSERT INTO tok(rowid, body) VALUES(?, ?)`, rowid, idx); err != nil {
			t.Fatalf("insert: %v", err)
		}
		if got := ftsTokenCount(t, db, rowid); got != len(toks) {
			t.Fatalf("IndexText(%q) = %q: unicode61 saw %d tokens, want %d", s, idx, got, len(toks))
		}
		for _, all := range []bool{false, true} {
			if q := probes(s, all); q != "" {
				if ids := match(t, db, "tok", q); !slices.Contains(ids, rowid) {
					t.Fatalf("probes(%q, all %v) = %s does not find its own row", s, all, q)
				}
			}
		}
		// Keep the table to one row: fts5vocab scans the whole index.
		if _, err := db.Exec(`DELETE FROM tok WHERE rowid = ?`, rowid); err != nil {
			t.Fatalf("delete: %v", err)
		}
	})
}
