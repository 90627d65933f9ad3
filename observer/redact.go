package observer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"dshmem/events"
	"dshmem/observer/secretrules"
)

// Kinds of credential the Redactor knows. Each match is replaced by
// "[REDACTED:<kind>]"; the placeholder format is part of the on-disk
// format (it is what the log holds instead of the secret); do not change.
const (
	kindPrivateKey     = "private-key"
	kindAnthropicKey   = "anthropic-key"
	kindOpenAIKey      = "openai-key" // OpenAI and DeepSeek (sk-…)
	kindGitHubToken    = "github-token"
	kindSlackToken     = "slack-token"
	kindGoogleAPIKey   = "google-api-key"
	kindAWSSecretKey   = "aws-secret-key"
	kindAWSAccessKeyID = "aws-access-key-id"
	kindJWT            = "jwt"
	kindBearerToken    = "bearer-token"
	kindBasicAuth      = "basic-auth"
	kindURLCredentials = "url-credentials"
	kindPassword       = "password" // key=value, key: value, curl -u user:pass
)

// placeholderRe matches a placeholder the Redactor wrote (or one that
// merely looks like it): such text is opaque to every rule, which is what
// makes redaction idempotent.
var placeholderRe = regexp.MustCompile(`\[REDACTED:[a-z0-9-]+\]`)

func placeholder(kind string) string { return "[REDACTED:" + kind + "]" }

// rule finds one shape of credential.
type rule struct {
	kind string
	re   *regexp.Regexp
	// groups are the submatches that hold the secret, tried in order; the
	// first that took part in the match is replaced. None: the whole match.
	// A rule replaces only the secret, so `password=` or `https://user:`
	// around it stay readable.
	groups []int
	// valid, when set, vets the secret text; it keeps prose out.
	valid func(secret string) bool
	// hints are lower-case literals one of which every match contains; a
	// text (or, with perLine, a line) holding none of them is skipped
	// without running the regexp. They only make redaction fast.
	hints []string
	// perLine marks a rule whose matches never span a line end, so it runs
	// only on the lines that hold a hint.
	perLine bool
}

// Shared pieces of the key=value rules. A key is whatever ends in a
// credential word (DB_PASSWORD, apiKey, x-api-key, client_secret,
// SECRET_KEY; the match starts at the word, the prefix needs no check) or
// a Chinese one; the separator is = : := => or a
// full-width colon, with spaces or tabs around it but no line end (a key
// at the end of a line is not followed by its value on the next); the
// value is quoted, or an unquoted run that stops at white space, quotes,
// , ; & ) } < > and CJK text or punctuation. No match spans lines.
const (
	credWord = `(?:password|passwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|auth[_-]?key|credentials?)` +
		`(?:[_.-]?(?:key|base|value|b64))?`
	kvSep        = `["']?[ \t]*(?::=|=>|[:=：])[ \t]*`
	unquotedChar = `[^\s"'\x60,;&)}<>\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\x{3000}-\x{303F}\x{FF00}-\x{FFEF}]`
	kvValue      = `(?:"([^"\n]+)"|'([^'\n]+)'|(` + unquotedChar + `+))`
)

// rules run in this order, each over the output of the one before: a
// specific shape (a GitHub token given as a password) is named by its own
// kind before the generic key=value rule sees it, and then that rule
// leaves the placeholder alone.
var rules = []rule{
	{kind: kindPrivateKey, hints: []string{"private key"}, re: regexp.MustCompile(
		// A block with no END line (cut off) is redacted to the end.
		`-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*)`)},
	{kind: kindAnthropicKey, hints: []string{"sk-ant-"}, re: regexp.MustCompile(`\bsk-ant-[a-z]+[0-9]*-[A-Za-z0-9_-]{20,}`)},
	{kind: kindOpenAIKey, hints: []string{"sk-"}, re: regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?([A-Za-z0-9_-]{20,})`),
		valid: randomish(12)},
	{kind: kindGitHubToken, hints: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
		re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`)},
	{kind: kindSlackToken, hints: []string{"xox", "xapp-"}, re: regexp.MustCompile(`\b(?:xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,})`),
		valid: hasDigit},
	{kind: kindSlackToken, hints: []string{"hooks.slack.com"},
		re:     regexp.MustCompile(`https://hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9_/-]{10,})`),
		groups: []int{1}},
	{kind: kindGoogleAPIKey, hints: []string{"aiza"}, re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`)},
	{kind: kindAWSSecretKey, hints: []string{"secret"}, perLine: true, re: regexp.MustCompile(
		`(?i)(?:aws[_-]?secret[_-]?(?:access[_-]?)?key|secret[_-]?access[_-]?key)` + kvSep + `["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)`),
		groups: []int{1}},
	{kind: kindAWSSecretKey, hints: []string{"akia", "asia"}, re: regexp.MustCompile(
		// A key id followed by its secret, as in a credentials CSV.
		`\b(?:AKIA|ASIA)[A-Z0-9]{16}["']?[\s,;:|=]+["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)`),
		groups: []int{1}, valid: mixedCase},
	{kind: kindAWSAccessKeyID, hints: []string{"akia", "asia", "abia", "acca", "a3t"},
		re: regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b`)},
	{kind: kindJWT, hints: []string{"eyj"}, re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*`)},
	{kind: kindBearerToken, hints: []string{"bearer", "authorization"}, re: regexp.MustCompile(
		`(?i)(?:\bbearer\s+|\bauthorization["']?\s*[:=]\s*["']?token\s+)([A-Za-z0-9._~+/-]+=*)`),
		groups: []int{1}, valid: func(s string) bool { return len(s) >= 16 && hasDigit(s) && hasLetter(s) }},
	{kind: kindBasicAuth, hints: []string{"authorization"},
		re:     regexp.MustCompile(`(?i)\bauthorization["']?\s*[:=]\s*["']?basic\s+([A-Za-z0-9+/]{6,}={0,2})`),
		groups: []int{1}},
	{kind: kindURLCredentials, hints: []string{"://"}, re: regexp.MustCompile(
		// scheme://user:password@host: the password, up to the last @
		// before the path.
		`\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:"'<>]*:([^\s/?#"'<>]+)@`),
		groups: []int{1}, valid: plausibleValue},
	{kind: kindURLCredentials, hints: []string{"://"}, re: regexp.MustCompile(
		// scheme://token@host: a user name that is a token.
		`\b[A-Za-z][A-Za-z0-9+.-]*://([A-Za-z0-9._~%-]{20,})@`),
		groups: []int{1}, valid: randomish(12)},
	{kind: kindPassword, hints: []string{"curl"}, perLine: true,
		// curl -u user:password; only after curl, since docker -u 1000:1000
		// is a uid and gid.
		re:     regexp.MustCompile(`\bcurl\b[^\n]*?[ \t](?:-u|--user)[ \t]+["']?[^\s:"']+:([^\s"']+)`),
		groups: []int{1}, valid: plausibleValue},
	{kind: kindPassword, hints: []string{"pass", "secret", "token", "key", "credential", "密码", "口令", "密钥", "令牌"}, perLine: true,
		re:     regexp.MustCompile(`(?i)(?:` + credWord + `|密码|口令|密钥|令牌)` + kvSep + kvValue),
		groups: []int{1, 2, 3}, valid: plausibleValue},
}

// maxPasses bounds the passes of String. Every pass that changes the text
// turns at least one byte outside placeholders into a placeholder, so the
// loop ends anyway; in practice the second pass finds nothing.
const maxPasses = 16

// Redactor replaces credential-shaped text with "[REDACTED:<kind>]"
// (ARCHITECTURE §8) by the built-in rules. It holds no state: it is safe
// for concurrent use and its zero value is ready to use.
type Redactor struct{}

// NewRedactor returns a Redactor.
func NewRedactor() *Redactor { return &Redactor{} }

// String redacts s and returns the kinds it found, sorted, or nil.
// Redacting the output again changes nothing.
func (r *Redactor) String(s string) (string, []string) {
	found := map[string]bool{}
	s = r.redact(s, found)
	return s, sortedKinds(found)
}

func (r *Redactor) redact(s string, found map[string]bool) string {
	for range maxPasses {
		changed := false
		low := lowerASCII(s) // once per pass, not once per rule
		for i := range rules {
			var did bool
			s, did = rules[i].apply(s, low, found)
			if did {
				low = lowerASCII(s)
			}
			changed = changed || did
		}
		var did bool
		s, did = applyRuleSet(s, low, found)
		changed = changed || did
		if !changed {
			break
		}
	}
	return s
}

// apply replaces every match of the rule in s whose secret is not already
// a placeholder, and reports whether it replaced any.
// low is s with A–Z lower-cased.
func (ru *rule) apply(s, low string, found map[string]bool) (string, bool) {
	if !ru.hintedLower(low) {
		return s, false
	}
	if !ru.perLine {
		return ru.replace(s, found)
	}
	var b strings.Builder
	changed := false
	for rest := s; rest != ""; {
		line, tail, nl := strings.Cut(rest, "\n")
		rest = tail
		if ru.hinted(line) {
			var did bool
			line, did = ru.replace(line, found)
			changed = changed || did
		}
		b.WriteString(line)
		if nl {
			b.WriteByte('\n')
		}
	}
	if !changed {
		return s, false
	}
	return b.String(), true
}

// hinted reports whether s, lower-cased, holds one of the rule's hints.
func (ru *rule) hinted(s string) bool {
	return ru.hintedLower(lowerASCII(s))
}

// hintedLower is hinted for text already lower-cased with lowerASCII.
func (ru *rule) hintedLower(low string) bool {
	if ru.hints == nil {
		return true
	}
	for _, h := range ru.hints {
		if strings.Contains(low, h) {
			return true
		}
	}
	return false
}

// lowerASCII lower-cases A–Z only, so byte offsets do not move.
func lowerASCII(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return 'A' <= r && r <= 'Z' })
	if i < 0 {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		if c := b[i]; 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// replace does the work of apply on one text.
func (ru *rule) replace(s string, found map[string]bool) (string, bool) {
	locs := ru.re.FindAllStringSubmatchIndex(s, -1)
	if locs == nil {
		return s, false
	}
	holders := placeholderRe.FindAllStringIndex(s, -1)
	var b strings.Builder
	last, changed := 0, false
	for _, loc := range locs {
		start, end := loc[0], loc[1]
		for _, g := range ru.groups {
			if loc[2*g] >= 0 {
				start, end = loc[2*g], loc[2*g+1]
				break
			}
		}
		// Matches come in order, so placeholders wholly before this one
		// can be dropped for the next.
		for len(holders) > 0 && holders[0][1] <= start {
			holders = holders[1:]
		}
		if !opaqueFree(start, end, holders) {
			continue
		}
		if ru.valid != nil && !ru.valid(s[start:end]) {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(placeholder(ru.kind))
		last, changed = end, true
		found[ru.kind] = true
	}
	if !changed {
		return s, false
	}
	b.WriteString(s[last:])
	return b.String(), true
}

// ruleSet is the maintained rule set (observer/secretrules); it runs
// after the rules above, so a shape both know is named by our kind.
func ruleSet() *secretrules.Set {
	set, err := secretrules.Default()
	if err != nil {
		// The rules are embedded data that TestRuleSet compiles: this is
		// a broken build, not bad input.
		panic("redact: " + err.Error())
	}
	return set
}

// applyRuleSet replaces what the rule set finds in s, as rule.replace
// does for one of ours: never inside or from the start of a placeholder.
func applyRuleSet(s, low string, found map[string]bool) (string, bool) {
	fs := ruleSet().Find(s, low)
	if len(fs) == 0 {
		return s, false
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Start < fs[j].Start })
	holders := placeholderRe.FindAllStringIndex(s, -1)
	var b strings.Builder
	last, changed := 0, false
	for _, f := range fs {
		if f.Start < last || !opaqueFree(f.Start, f.End, holders) {
			continue // overlaps a finding already replaced, or a placeholder
		}
		b.WriteString(s[last:f.Start])
		b.WriteString(placeholder(f.Rule))
		last, changed = f.End, true
		found[f.Rule] = true
	}
	if !changed {
		return s, false
	}
	b.WriteString(s[last:])
	return b.String(), true
}

// opaqueFree reports whether s[start:end] may be replaced: it must not cut
// into a placeholder nor start with one. A span that starts with a
// placeholder is a value an earlier, more specific rule has already
// redacted; what follows it is context, such as "@github.com/org/repo"
// after "x-access-token:[REDACTED:url-credentials]", and stays.
func opaqueFree(start, end int, holders [][]int) bool {
	if start >= end {
		return false
	}
	for _, h := range holders {
		if h[0] >= end {
			break
		}
		if h[1] <= start {
			continue
		}
		if h[0] <= start || h[1] > end {
			return false
		}
	}
	return true
}

func sortedKinds(found map[string]bool) []string {
	if len(found) == 0 {
		return nil
	}
	kinds := make([]string, 0, len(found))
	for k := range found {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

func hasDigit(s string) bool { return strings.ContainsAny(s, "0123456789") }

func hasLetter(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r < 128 && unicode.IsLetter(r) }) >= 0
}

func mixedCase(s string) bool {
	return strings.IndexFunc(s, unicode.IsUpper) >= 0 && strings.IndexFunc(s, unicode.IsLower) >= 0
}

// randomish returns a check that a token looks generated rather than
// written: it has a digit and a letter, and a run of at least minRun ASCII
// letters and digits (so "sk-learn-2024-release-notes" stays).
func randomish(minRun int) func(string) bool {
	return func(s string) bool {
		if !hasDigit(s) || !hasLetter(s) {
			return false
		}
		run := 0
		for i := 0; i < len(s); i++ {
			c := s[i]
			if '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
				run++
				if run >= minRun {
					return true
				}
			} else {
				run = 0
			}
		}
		return false
	}
}

// notSecrets are values after "password:" or "token=" that are words of a
// sentence, types or empty markers rather than credentials.
var notSecrets = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and any are as at be bearer basic bool boolean below above but by can
		empty false for from here hidden how if in int is it its masked my n/a nil no none not null of on
		optional or our redacted required same see set should str string that the their there this to todo
		true unknown unset undefined was were will with yes you your
		password passwd pass pwd secret token key apikey api_key credentials`) {
		m[w] = true
	}
	return m
}()

// envRef matches values that name where a secret comes from instead of
// holding it: $TOKEN, ${API_KEY}, {{ .Token }}, ${{ secrets.X }} (cut at
// its first space), %s, process.env.X, os.environ[...], os.getenv(...).
var envRef = regexp.MustCompile(`^(?:\$[A-Z_][A-Z0-9_]*$|\$\{|\$?\{\{|%[sdvq]$|%\(\w+\)s|process\.env\b|os\.environ\b|os\.getenv\b|getenv\(|ENV\[)`)

// plausibleValue keeps the key=value and URL rules off prose, templates
// and placeholders: the value has at least 3 bytes, is not a common word,
// an empty marker or the name of the thing ("password"), not an
// environment reference, and not one character repeated (***, xxxx).
func plausibleValue(v string) bool {
	if len(v) < 3 || notSecrets[strings.ToLower(v)] || envRef.MatchString(v) {
		return false
	}
	return strings.Trim(v, v[:1]) != ""
}

// labelledPlaceholder is a placeholder with what may stand before it in a
// text that holds nothing but credentials: "export", a key and separator,
// "Bearer", "Authorization: Basic".
var labelledPlaceholder = regexp.MustCompile(
	`(?i)(?:(?:export|set)\s+)?(?:[\w.-]+` + kvSep + `["']?|(?:密码|口令|密钥|令牌)` + kvSep + `|(?:bearer|token|basic)\s+)?` +
		`(?:(?:bearer|token|basic)\s+)?\[REDACTED:[a-z0-9-]+\]`)

// OnlySecret reports whether s holds nothing but credentials: after
// redaction, and after removing each placeholder with the label or
// key= before it, no letter or digit is left. An explicit memory write of
// such text is refused: the memory would be the secret.
func OnlySecret(s string) bool {
	red, kinds := (&Redactor{}).String(s)
	if len(kinds) == 0 {
		return false
	}
	rest := labelledPlaceholder.ReplaceAllString(red, " ")
	return strings.IndexFunc(rest, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0
}

// Envelope redacts every string in e.Data, object keys included, and
// re-encodes it compactly with keys in their original order and numbers
// as written (encoding through map[string]any would sort the keys and
// round the numbers). The output depends only on the decoded values, so
// equal data gives equal bytes however it was escaped. ID, Type, Time,
// Session and Cwd are left alone. It returns the kinds found, sorted.
//
// Redacting keys can make two keys equal; both are kept, as in the input.
func (r *Redactor) Envelope(e *events.Envelope) ([]string, error) {
	if len(e.Data) == 0 {
		return nil, nil
	}
	found := map[string]bool{}
	out, err := r.redactJSON(e.Data, found)
	if err != nil {
		return nil, fmt.Errorf("redact data: %w", err)
	}
	e.Data = out
	return sortedKinds(found), nil
}

// container is one open object or array during the token walk.
type container struct {
	object  bool
	n       int  // members written so far
	wantKey bool // object: the next string is a key
}

// redactJSON walks one JSON value token by token, writing it back with
// every string redacted.
func (r *Redactor) redactJSON(data []byte, found map[string]bool) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out bytes.Buffer
	out.Grow(len(data))
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	var stack []container
	started := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if started && len(stack) == 0 {
			return nil, errors.New("trailing data after the JSON value")
		}
		started = true
		// A value (not a key, not a closing delimiter) is preceded by a
		// comma when it is not the first in an array.
		isKey := false
		if n := len(stack); n > 0 {
			top := &stack[n-1]
			_, isString := tok.(string)
			isKey = top.object && top.wantKey && isString
			closing := tok == json.Delim('}') || tok == json.Delim(']')
			switch {
			case closing:
			case isKey:
				if top.n > 0 {
					out.WriteByte(',')
				}
				top.wantKey = false
			case top.object:
				top.wantKey = true
				top.n++
			default:
				if top.n > 0 {
					out.WriteByte(',')
				}
				top.n++
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			out.WriteByte(byte(t))
			switch t {
			case '{':
				stack = append(stack, container{object: true, wantKey: true})
			case '[':
				stack = append(stack, container{})
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if err := enc.Encode(r.redact(t, found)); err != nil {
				return nil, err
			}
			out.Truncate(out.Len() - 1) // Encode's newline
			if isKey {
				out.WriteByte(':')
			}
		case json.Number:
			out.WriteString(t.String())
		case bool:
			fmt.Fprint(&out, t)
		case nil:
			out.WriteString("null")
		}
	}
	if !started || len(stack) > 0 {
		return nil, io.ErrUnexpectedEOF
	}
	return out.Bytes(), nil
}
