package distill

import (
	"regexp"
	"strings"
	"unicode"
)

// credential is one shape of secret the op check refuses.
type credential struct {
	kind string
	re   *regexp.Regexp
	// value, when set, is the submatch holding the secret (-1: the first
	// that took part), vetted by valid (default plausibleSecret) so prose
	// ("password: required") is not refused.
	value int
	valid func(string) bool
}

// credentials is a deliberately small detector. Intake redacts every
// event before it is written (observer.Redactor, which this package may
// not import), so the messages a distiller reads are already clean; this
// catches what a model might make up or reassemble, and refuses the op
// rather than rewriting it.
var credentials = []credential{
	{kind: "private-key", re: regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----`)},
	{kind: "api-key", re: regexp.MustCompile(`\bsk-([A-Za-z0-9][A-Za-z0-9_-]{19,})`), value: 1, valid: longSegment}, // OpenAI, DeepSeek, Anthropic
	{kind: "github-token", re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`)},
	{kind: "aws-access-key-id", re: regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{kind: "slack-token", re: regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}|\bxapp-\d-[A-Za-z0-9-]{10,}`)},
	{kind: "google-api-key", re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`)},
	{kind: "jwt", re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)},
	{kind: "bearer-token", re: regexp.MustCompile(`(?i)\b(?:bearer|token)\s+([A-Za-z0-9._~+/=-]{20,})`), value: 1},
	{kind: "url-credentials", re: regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]*:([^/\s]+)@`), value: 1},
	{kind: "url-credentials", re: regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://([A-Za-z0-9_-]{20,})@`), value: 1},
	{kind: "password", re: regexp.MustCompile(`(?:^|\s)-u\s+[^\s:]+:([^\s:]+)(?:\s|$)`), value: 1}, // curl -u user:pass
	{kind: "password", re: regexp.MustCompile(
		`(?i)(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|密码|口令)(?:[_.-]?(?:key|value))?["']?[ \t]*(?:=|:|：|:=)[ \t]*(?:"([^"\n]{4,})"|'([^'\n]{4,})'|([^\s"'，,;]{4,}))`), value: -1},
}

// credentialIn returns the kind of the first credential-shaped text in s,
// or "".
func credentialIn(s string) string {
	for _, c := range credentials {
		valid := c.valid
		if valid == nil {
			valid = plausibleSecret
		}
		for _, m := range c.re.FindAllStringSubmatch(s, -1) {
			v := ""
			switch {
			case c.value > 0:
				v = m[c.value]
			case c.value < 0:
				for _, g := range m[1:] {
					if g != "" {
						v = g
						break
					}
				}
			}
			if c.value == 0 || valid(v) {
				return c.kind
			}
		}
	}
	return ""
}

var (
	// identifierRe and envNameRe are references, not values:
	// process.env.DEEPSEEK_API_KEY, settings.token, DEEPSEEK_API_KEY.
	identifierRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$`)
	envNameRe    = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
)

// longSegment accepts a key body with a run of at least 20 letters and
// digits: real keys have one, "sk-learn-2024-release-notes-v1" has not.
func longSegment(v string) bool {
	run := 0
	for _, r := range v {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			run++
			if run >= 20 {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// plausibleSecret keeps prose and references out of the generic shapes:
// a redaction placeholder, an environment or template reference, a call,
// a mask or a word like "required" is not a secret; a secret mixes at
// least two of lower case, upper case, digits and symbols.
func plausibleSecret(v string) bool {
	if v == "" || strings.HasPrefix(v, "[REDACTED:") || strings.ContainsAny(v[:1], "$<{[(*%") ||
		strings.Contains(v, "(") || strings.Contains(v, "${") || identifierRe.MatchString(v) || envNameRe.MatchString(v) {
		return false
	}
	var lower, upper, digit, other bool
	for _, r := range v {
		switch {
		case unicode.IsLower(r):
			lower = true
		case unicode.IsUpper(r):
			upper = true
		case unicode.IsDigit(r):
			digit = true
		default:
			other = true
		}
	}
	n := 0
	for _, b := range []bool{lower, upper, digit, other} {
		if b {
			n++
		}
	}
	return n >= 2
}
