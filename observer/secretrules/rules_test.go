package secretrules

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultCompiles(t *testing.T) {
	s, err := Default()
	require.NoError(t, err)
	cfg, err := Parse(gitleaksTOML)
	require.NoError(t, err)
	require.Len(t, cfg.Rules, 222, "gitleaks v8.30.1 has 222 rules")
	// Every rule is either in use or skipped with a reason.
	assert.Equal(t, len(cfg.Rules), len(s.Rules())+len(s.Skipped))
	assert.Contains(t, s.Skipped, "generic-api-key")
	assert.Contains(t, s.Skipped, "pkcs12-file")
	assert.GreaterOrEqual(t, len(s.Rules()), 200)
	// Default compiles a rule at its first use: every one of the
	// embedded file's must compile, so that use never fails.
	require.NoError(t, s.loadAll(0))
}

// A lazy set compiles only the rules whose keywords a text holds, and
// finds what an eagerly compiled set finds.
func TestLazyCompileFindsTheSame(t *testing.T) {
	cfg, err := Parse(gitleaksTOML)
	require.NoError(t, err)
	lazy, err := compile(cfg, false)
	require.NoError(t, err)
	eager, err := Compile(cfg)
	require.NoError(t, err)
	loaded := func() (n int) {
		for i := range lazy.rules {
			if lazy.rules[i].re != nil {
				n++
			}
		}
		return n
	}
	require.Zero(t, loaded(), "nothing compiled before a text needs it")
	assert.Empty(t, lazy.Find("plain words only", "plain words only"))
	require.Zero(t, loaded())
	texts := []string{
		"token for ci: glpat-" + "AbCdEf0123456789xYzW and nothing else",
		"stripe: sk_live_51AbCdEfGhIjKlMnOpQrStUv, also rk_live_51ZyXwVuTsRqPoNmLkJiHgFeDc",
		"npm_" + pseudo(36, alnum) + " then pypi-AgEIcHlwaS5vcmc" + pseudo(60, alnum),
	}
	for _, text := range texts {
		low := strings.ToLower(text)
		want := eager.Find(text, low)
		require.NotEmpty(t, want, "%q", text)
		assert.Equal(t, want, lazy.Find(text, low), "%q", text)
	}
	n := loaded()
	assert.Greater(t, n, 0)
	assert.Less(t, n, len(lazy.rules)/4, "only the rules these texts' keywords select")
	// A rule that does not compile is an error of Compile, not of Find.
	_, err = Compile(&Config{Rules: []Rule{{ID: "bad", Regex: "a(", Keywords: []string{"a"}}}})
	require.ErrorContains(t, err, "rule bad")
}

func TestParseErrors(t *testing.T) {
	for _, src := range []string{
		"[[rules]]\nid = \"x\"\nregex = '''a\n", // ''' not closed
		"[[rules]]\nkeywords = [\n\"a\",\n",     // array not closed
		"[[rules]]\nwhat = \"x\"\n",             // unknown key
		"[table]\n",                             // unknown table
		"[[rules.allowlists]]\nregexes = []\n",  // allowlist before a rule
		"[[rules]]\nentropy = \"high\"\n",       // not a number
		"[[rules]]\nid = \"x\" trailing\n",      // junk after a string
		"[[rules]]\nid\n",                       // no =
	} {
		_, err := Parse(src)
		assert.Error(t, err, "%q", src)
		if err != nil {
			assert.Contains(t, err.Error(), "line ", "%q: the error names the line", src)
		}
	}
	cfg, err := Parse("# c\n[[rules]]\nid = \"a\\u0041\"\nregex = '''x'y'''\nkeywords = [ # k\n  \"k\", '''j''',\n]\nentropy = 3.5\nsecretGroup = 1\n")
	require.NoError(t, err)
	require.Len(t, cfg.Rules, 1)
	r := cfg.Rules[0]
	assert.Equal(t, "aA", r.ID)
	assert.Equal(t, "x'y", r.Regex)
	assert.Equal(t, []string{"k", "j"}, r.Keywords)
	assert.Equal(t, 3.5, r.Entropy)
	assert.Equal(t, 1, r.SecretGroup)
}

func TestCompileErrors(t *testing.T) {
	_, err := Compile(&Config{Rules: []Rule{{ID: "r", Regex: "(", Keywords: []string{"x"}}}})
	assert.ErrorContains(t, err, "rule r")
	_, err = Compile(&Config{Rules: []Rule{{ID: "r", Regex: "x"}}})
	assert.ErrorContains(t, err, "no keywords")
	_, err = Compile(&Config{Rules: []Rule{{ID: "r", Regex: "x", Keywords: []string{"x"}, SecretGroup: 2}}})
	assert.ErrorContains(t, err, "secretGroup")
}

func TestMatcherFindsEveryKeyword(t *testing.T) {
	kws := []string{"he", "she", "his", "hers", "sk-", "ghp_", "a"}
	m := NewMatcher(kws)
	for _, text := range []string{"ushers", "his sk-x ghp_y", "", "zzz", "aaa", "shhe", "h-e"} {
		got := map[int]bool{}
		m.Each(text, func(k, end int) {
			got[k] = true
			assert.Equal(t, kws[k], text[end-len(kws[k]):end])
		})
		for i, k := range kws {
			assert.Equal(t, strings.Contains(text, k), got[i], "%q in %q", k, text)
		}
	}
}

func TestFind(t *testing.T) {
	s, err := Default()
	require.NoError(t, err)
	text := "token for ci: glpat-" + "AbCdEf0123456789xYzW and nothing else"
	f := s.Find(text, strings.ToLower(text))
	require.NotEmpty(t, f)
	assert.Equal(t, "gitlab-pat", f[0].Rule)
	assert.Equal(t, "glpat-AbCdEf0123456789xYzW", text[f[0].Start:f[0].End])
	// Text without any keyword runs no rule.
	assert.Empty(t, s.Find("plain words only", "plain words only"))
	// The global allowlist: a value that is a variable reference.
	ref := "stripe_key = $STRIPE_KEY"
	assert.Empty(t, s.Find(ref, strings.ToLower(ref)))
}

func TestEntropy(t *testing.T) {
	assert.Equal(t, 0.0, Entropy(""))
	assert.Equal(t, 0.0, Entropy("aaaa"))
	assert.InDelta(t, 2.0, Entropy("abcd"), 1e-9)
}

func BenchmarkFind(b *testing.B) {
	s, err := Default()
	require.NoError(b, err)
	text := strings.Repeat("We moved the build to the new runner and the tests pass again; the cache key changed. ", 12)
	low := strings.ToLower(text)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for range b.N {
		s.Find(text, low)
	}
}

// findWhole is Find without windows: every selected rule over the whole
// text. Windows must find the same.
func findWhole(t *testing.T, s *Set, text string) []Finding {
	low := strings.ToLower(text)
	sel := map[int]bool{}
	s.kw.Each(low, func(ki, _ int) {
		for _, ri := range s.byKeyword[ki] {
			sel[ri] = true
		}
	})
	var out []Finding
	for ri := range s.rules {
		if !sel[ri] {
			continue
		}
		require.NoError(t, s.rules[ri].load())
		for _, loc := range s.rules[ri].re.FindAllStringSubmatchIndex(text, -1) {
			if f, ok := s.check(s.rules[ri], text, loc); ok {
				out = append(out, f)
			}
		}
	}
	return out
}

func TestWindowsFindWhatTheWholeTextHolds(t *testing.T) {
	s, err := Default()
	require.NoError(t, err)
	texts := []string{
		"glpat-AbCdEf0123456789xYzW",
		"prefix words then hf_" + pseudo(34, letters) + " and more words after it",
		"stripe: sk_live_51AbCdEfGhIjKlMnOpQrStUv, also rk_live_51ZyXwVuTsRqPoNmLkJiHgFeDc",
		"line one\nexport SENDGRID=SG." + pseudo(22, alnum) + "." + pseudo(43, alnum) + "\nline three",
		"vault token s.Ab3dEf9hIj1lMn7pQr5tUv2x; and hvs." + strings.Repeat("aB3", 32),
		"npm_" + pseudo(36, alnum) + " then pypi-AgEIcHlwaS5vcmc" + pseudo(60, alnum),
		strings.Repeat("word ", 300) + "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx" + strings.Repeat(" word", 300),
	}
	rules := map[string]bool{}
	for _, text := range texts {
		got := s.Find(text, strings.ToLower(text))
		want := findWhole(t, s, text)
		assert.ElementsMatch(t, want, got, "%q", text)
		for _, f := range got {
			rules[f.Rule] = true
		}
	}
	// The texts are not vacuous: most of them hold a finding.
	assert.GreaterOrEqual(t, len(rules), 8, "rules found: %v", rules)
	assert.Equal(t, 126, maxMatchLen(`\b((?:hvs\.[\w-]{90,120}|s\.(?i:[a-z0-9]{24})))(?:[\x60'"\s;]|\\[nr]|$)`))
	assert.Equal(t, -1, maxMatchLen(`a+`))
	assert.Equal(t, 3, maxMatchLen(`[é]a`))
}

const (
	letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	alnum   = letters + "0123456789"
)

// pseudo returns n bytes of alphabet, the same on every run, that look
// generated (so entropy checks pass) without being anyone's credential.
func pseudo(n int, alphabet string) string {
	b := make([]byte, n)
	x := uint32(2463534242) + uint32(n)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = alphabet[int(x%uint32(len(alphabet)))]
	}
	return string(b)
}

// An array spanning lines is parsed again only at a line holding a ']'
// (Parse): the bracket may close it after an element, or sit in a string
// or a comment of a line that does not.
func TestParseArrayAcrossLines(t *testing.T) {
	cfg, err := Parse("[[rules]]\nid = \"x\"\nkeywords = [\n  \"a]b\", # not ] yet\n  \"c\",\n  \"d\"]\nentropy = 2\n")
	require.NoError(t, err)
	require.Len(t, cfg.Rules, 1)
	assert.Equal(t, []string{"a]b", "c", "d"}, cfg.Rules[0].Keywords)
	assert.Equal(t, 2.0, cfg.Rules[0].Entropy)
}

// loadAll compiles every rule of a lazy set, and Find beside it still finds
// what it finds alone (each rule compiles once, whoever needs it first).
// A fresh set: Default's rules are compiled by TestDefaultCompiles.
func TestWarm(t *testing.T) {
	cfg, err := Parse(gitleaksTOML)
	require.NoError(t, err)
	s, err := compile(cfg, false)
	require.NoError(t, err)
	text := "token for ci: glpat-" + "AbCdEf0123456789xYzW and nothing else"
	done := make(chan struct{})
	go func() { _ = s.loadAll(0); close(done) }()
	f := s.Find(text, strings.ToLower(text))
	<-done
	require.NotEmpty(t, f)
	assert.Equal(t, "gitlab-pat", f[0].Rule)
	for _, r := range s.rules {
		assert.NotNil(t, r.re, "rule %s compiled", r.id)
	}
	Warm(0) // Default's, as serve runs it
}
