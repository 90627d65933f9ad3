package tokenize

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTokens(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"Empty", "", nil},
		{"OnlyPunctuationAndEmoji", "😀 !!! — ¿? 🚀🚀 ©®", nil},
		{"PlainWords", "Hello, World", []string{"hello", "world"}},
		{"FullWidthAndIdeographicSpace", "ＤＳＨ　记忆", []string{"dsh", "记忆"}},
		{"FullWidthPunctuationSeparates", "记忆，注入！ＡＢＣ", []string{"记忆", "注入", "abc"}},
		{"CamelCase", "parseHTTPRequest", []string{"parsehttprequest", "parse", "http", "request"}},
		{"PascalCase", "MemoryStore", []string{"memorystore", "memory", "store"}},
		{"CapitalRunAtEnd", "loadJSON", []string{"loadjson", "load", "json"}},
		{"LetterDigit", "sha256 v2", []string{"sha256", "sha", "256", "v2", "v", "2"}},
		{"SnakeCase", "go_build", []string{"gobuild", "go", "build"}},
		{"KebabCase", "dry-run", []string{"dryrun", "dry", "run"}},
		{"ScreamingSnake", "MAX_TOKEN_LEN", []string{"maxtokenlen", "max", "token", "len"}},
		{"DunderStaysOneSegment", "__init__", []string{"init"}},
		{"Path", "/usr/local/bin/go_build.sh", []string{"usrlocalbingobuildsh", "usr", "local", "bin", "go", "build", "sh"}},
		{"WindowsPath", `C:\Users\me`, []string{"cusersme", "c", "users", "me"}},
		{"DottedName", "os.path.join", []string{"ospathjoin", "os", "path", "join"}},
		{"CompoundWithCamelSegments", "getUser_byID", []string{"getuserbyid", "getuser", "get", "user", "byid", "by", "id"}},
		{"Date", "2024-01-15", []string{"20240115", "2024", "01", "15"}},
		{"SentenceDotThenSpaceIsNotCompound", "done. Next", []string{"done", "next"}},
		{"TrailingConnector", "end. ", []string{"end"}},
		{"CJKBigrams", "记忆注入", []string{"记忆", "忆注", "注入"}},
		{"CJKTwoChars", "记忆", []string{"记忆"}},
		{"CJKLoneChar", "我", []string{"我"}},
		{"CJKLoneCharBetweenPunctuation", "好，我。", []string{"好", "我"}},
		{"MixedCJKAndASCII", "修复DSH的记忆", []string{"修复", "dsh", "的记", "记忆"}},
		{"DigitsSplitCJK", "第3章", []string{"第", "3", "章"}},
		{"JapaneseKanaRun", "カタカナのテスト", []string{"カタ", "タカ", "カナ", "ナの", "のテ", "テス", "スト"}},
		{"JapaneseProlongedMark", "メモリー", []string{"メモ", "モリ", "リー"}},
		{"HalfwidthKatakana", "ﾒﾓﾘｰ", []string{"メモ", "モリ", "リー"}},
		{"HalfwidthVoicedComposes", "ｶﾞｷﾞｸﾞ ﾊﾟﾝ ｳﾞ", []string{"ガギ", "ギグ", "パン", "ヴ"}},
		{"KoreanHangul", "한국어 문장", []string{"한국", "국어", "문장"}},
		{"LatinAccentsKept", "naïve café", []string{"naïve", "café"}},
		{"CombiningMarkDropped", "e\u0301te\u0301", []string{"ete"}},
		{"Ligature", "ﬁle", []string{"file"}},
		{"CaseFoldOrbit", "ſtraße ΣΊΣΥΦΟΣ Kelvin", []string{"straße", "σίσυφοσ", "kelvin"}},
		{"Cyrillic", "ПаМять", []string{"память", "па", "мять"}},
		{"EmojiSeparates", "memory😀inject", []string{"memory", "inject"}},
		{"Email", "dev@example.com", []string{"devexamplecom", "dev", "example", "com"}},
		{"URLConnectorRun", "https://x.io/a_b", []string{"httpsxioab", "https", "x", "io", "a", "b"}},
	}
	// One Scanner serves every case, so a buffer carried over from a
	// longer text would show.
	var sc Scanner
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Tokens(tt.in)
			assert.True(t, slices.Equal(got, tt.want), "Tokens(%q) = %q, want %q", tt.in, got, tt.want)
			scanned := scanAll(&sc, tt.in)
			assert.True(t, slices.Equal(scanned, tt.want), "Scanner.Scan(%q) = %q, want %q", tt.in, scanned, tt.want)
		})
	}
}

// scanAll collects the tokens sc yields for s.
func scanAll(sc *Scanner, s string) []string {
	var out []string
	sc.Scan(s, func(tok []byte) { out = append(out, string(tok)) })
	return out
}

func TestLongTokens(t *testing.T) {
	t.Run("SegmentCut", func(t *testing.T) {
		got := Tokens(strings.Repeat("a", 300))
		assert.False(t, len(got) != 1 || got[0] != strings.Repeat("a", maxToken), "got %q, want one token of %d a's", got, maxToken)
	})
	t.Run("SegmentCutAtRuneBoundary", func(t *testing.T) {
		got := Tokens("a" + strings.Repeat("é", 100)) // 1 + 200 bytes
		assert.False(t, len(got) != 1 || len(got[0]) != maxToken-1, "got %d tokens, first %d bytes, want 1 token of %d bytes", len(got), len(got[0]), maxToken-1)
	})
	t.Run("CompoundDropped", func(t *testing.T) {
		seg := strings.Repeat("x", 70)
		got := Tokens(seg + "_" + seg)
		want := []string{seg, seg}
		assert.True(t, slices.Equal(got, want), "got %q, want %q", got, want)
	})
}

func TestIndexText(t *testing.T) {
	got := IndexText("修复DSH的记忆 parseHTTP")
	want := "修复 dsh 的记 记忆 parsehttp parse http"
	assert.Equal(t, want, got, "got %q, want %q", got, want)
}

func TestTerms(t *testing.T) {
	got := Terms("go go_build GO build 记忆记忆")
	want := []string{"go", "gobuild", "build", "记忆", "忆记"}
	assert.True(t, slices.Equal(got, want), "got %q, want %q", got, want)
}

func TestQuote(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"记忆", `"记忆"`},
		{`a"b`, `"a""b"`},
	} {
		got := Quote(tt.in)
		assert.Equal(t, tt.want, got, "Quote(%q) = %s, want %s", tt.in, got, tt.want)
	}
	got := Terms("?!… 😀")
	assert.Len(t, got, 0, "Terms of no tokens = %q, want none: recall must not MATCH an empty expression", got)
}

func TestNormalizeRune(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"！～", "!~"},
		{"\u3000\u00a0\u2003", "   "},
		{"ｱｲｳ", "アイウ"},
		{"ﾃﾞﾄﾞﾂﾞﾁﾞﾊﾞﾎﾟﾜﾞｦﾞ", "デドヅヂバポヷヺ"},
		{"ｱﾞ", "ア\u3099"}, // no precomposed form: stays a (dropped) combining mark
		{"ｯﾞ", "ッ\u3099"},
		{"｡｢｣､･", "。「」、・"},
		{"ﬀﬃﬅ", "ffffist"},
		// The whole half-width block and every voiced pair, expected
		// values from Python's unicodedata.normalize("NFKC", …).
		{"｡｢｣､･ｦｧｨｩｪｫｬｭｮｯｰｱｲｳｴｵｶｷｸｹｺｻｼｽｾｿﾀﾁﾂﾃﾄﾅﾆﾇﾈﾉﾊﾋﾌﾍﾎﾏﾐﾑﾒﾓﾔﾕﾖﾗﾘﾙﾚﾛﾜﾝﾞﾟ", "。「」、・ヲァィゥェォャュョッーアイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモヤユヨラリルレロワン\u3099\u309a"},
		{"ｦﾞｳﾞｶﾞｷﾞｸﾞｹﾞｺﾞｻﾞｼﾞｽﾞｾﾞｿﾞﾀﾞﾁﾞﾂﾞﾃﾞﾄﾞﾊﾞﾊﾟﾋﾞﾋﾟﾌﾞﾌﾟﾍﾞﾍﾟﾎﾞﾎﾟﾜﾞ", "ヺヴガギグゲゴザジズゼゾダヂヅデドバパビピブプベペボポヷ"},
	}
	for _, tt := range tests {
		var rs []rune
		for _, r := range tt.in {
			rs = normalizeRune(rs, r)
		}
		got := string(rs)
		assert.Equal(t, tt.want, got, "normalize(%q) = %q, want %q", tt.in, got, tt.want)
	}
}

var benchText = strings.Repeat("我们的记忆注入逻辑需要修复：parseHTTPRequest 在 /usr/local/bin/go_build.sh 里调用 os.path.join，"+
	"then the agent wrote `memory_store.Get(ctx, key)` and said 好的。", 20)

func BenchmarkTokens(b *testing.B) {
	b.SetBytes(int64(len(benchText)))
	for b.Loop() {
		Tokens(benchText)
	}
}

func BenchmarkScanner(b *testing.B) {
	b.SetBytes(int64(len(benchText)))
	b.ReportAllocs()
	var sc Scanner
	n := 0
	for b.Loop() {
		sc.Scan(benchText, func(tok []byte) { n += len(tok) })
	}
	require.NotEqualValues(b, 0, n, "no tokens")
}

func TestJoinerIsJoinedTerms(t *testing.T) {
	var j Joiner // reused across texts, as the projector reuses one
	texts := []string{"", " ", "!!", "a", "a a A", benchText, strings.Repeat("x", 300),
		strings.Repeat("word ", 2000) + "other", "parseHTTPRequest parse http request",
		strings.Repeat("é", 200), "我们我们我们", "\xff\xfe a"}
	// Many distinct tokens, so the set grows several times within one text.
	var many strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&many, "t%d ", i%3000)
	}
	texts = append(texts, many.String(), "short after long")
	for _, s := range texts {
		assert.Equal(t, strings.Join(Terms(s), " "), j.Terms(s), "Joiner.Terms(%.40q)", s)
	}
}

func BenchmarkTerms(b *testing.B) {
	b.SetBytes(int64(len(benchText)))
	b.ReportAllocs()
	for b.Loop() {
		_ = strings.Join(Terms(benchText), " ")
	}
}

func BenchmarkJoiner(b *testing.B) {
	b.SetBytes(int64(len(benchText)))
	b.ReportAllocs()
	var j Joiner
	for b.Loop() {
		_ = j.Terms(benchText)
	}
}

// TestFoldFastPath holds fold's shortcuts to the rule it shortcuts, over
// every rune.
func TestFoldFastPath(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if want := unicode.ToLower(unicode.ToUpper(r)); fold(r) != want {
			t.Fatalf("fold(%U) = %U, want %U", r, fold(r), want)
		}
	}
}

func TestASCIIClassesAreUnicodes(t *testing.T) {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		assert.Equal(t, unicode.IsNumber(r), isNumber(r), "isNumber(%q)", r)
		assert.Equal(t, unicode.IsLower(r), isLower(r), "isLower(%q)", r)
		assert.Equal(t, unicode.IsUpper(r), isUpper(r), "isUpper(%q)", r)
	}
}
