package observer

import (
	"regexp"
	"strings"
	"unicode"
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
	// Added with the maintained rule set (which names its own kinds by
	// its rule ids, e.g. gitlab-pat, stripe-access-token).
	kindCLIPassword        = "cli-password"      // mysql -pX, --password X, sshpass -p X, docker login -p X
	kindAuthorization      = "authorization"     // Authorization: <any scheme> <credentials>
	kindCookie             = "cookie"            // Cookie: / Set-Cookie: name=value
	kindURLSecretParam     = "url-secret-param"  // ?X-Amz-Signature=…, &sig=…, ?access_token=…
	kindConnectionString   = "connection-string" // Pwd=…; AccountKey=…; SharedAccessKey=…
	kindSecretField        = "secret-field"      // a JSON value whose key names a secret
	kindSecretLabelChinese = "secret-label-zh"   // 密码是…, 令牌为…
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
	// seps, when set, are characters one of which every match contains
	// too (the separator of a key=value rule): a text, or with perLine a
	// line, that holds a hint but none of them is skipped as well. A
	// regexp without a literal prefix costs about a microsecond a byte,
	// and prose holds "token" or "key" far more often than "token=".
	seps string
	// perLine marks a rule whose matches never span a line end, so it runs
	// only on the lines that hold a hint.
	perLine bool
	// late marks a generic rule (key=value) that runs after the
	// maintained rule set, so a token of a known format is named by its
	// kind (gitlab-pat) even when it stands after "TOKEN=".
	late bool
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
	// credLabels are the word for a password in other languages (and a
	// key ending in _pass: DB_PASS, MYSQL_PASS; not "bypass").
	credLabels = `密码|口令|密钥|秘钥|私钥|令牌|passwort|kennwort|contraseña|senha|mot de passe|пароль|パスワード|비밀번호|암호|_pass\b`
	credWord   = `(?:password|passwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|auth[_-]?key|credentials?)` +
		`(?:[_.-]?(?:key|base|value|b64))?`
	kvSep        = `["']?[ \t]*(?::=|=>|[:=：])[ \t]*`
	kvSeps       = ":=：" // one of them is in every kvSep
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
	{kind: kindCLIPassword, hints: []string{"mysql", "mariadb"}, perLine: true,
		// The MySQL clients take the password glued to -p (-p alone
		// prompts; "-p name" is a database name).
		re:     regexp.MustCompile(`\b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n|;&]*?[ \t]-p([^\s"'-][^\s"']*)`),
		groups: []int{1}, valid: plausibleValue},
	{kind: kindCLIPassword, hints: []string{"redis-cli"}, perLine: true,
		// redis-cli -a PASSWORD (and --pass is the option rule's).
		re:     regexp.MustCompile(`\bredis-cli\b[^\n|;&]*?[ \t]-a[ \t]+["']?([^\s"'-][^\s"']*)`),
		groups: []int{1}, valid: plausibleValue},
	{kind: kindCLIPassword, hints: []string{"sshpass", "login"}, perLine: true,
		re:     regexp.MustCompile(`\b(?:sshpass[ \t]+-p|(?:docker|podman|helm|oras|buildah)[ \t]+(?:registry[ \t]+)?login\b[^\n|;&]*?[ \t](?:-p|--password))[ \t]*["']?([^\s"']+)`),
		groups: []int{1}, valid: plausibleValue},
	{kind: kindCLIPassword, hints: []string{"--"}, perLine: true,
		// --password X, --api-key X, --client-secret X, …: the option name
		// ends the word (--token-file is a path). --password=X is the
		// key=value rule's.
		re:     regexp.MustCompile(`(?i)(?:^|[\s"'])--(?:[a-z0-9]+-)*(?:password|passwd|passphrase|token|api-?key|secret|secret-key|access-key|auth-token|client-secret|private-key)[ \t]+["']?([^\s"'-][^\s"']*)`),
		groups: []int{1}, valid: plausibleValue},
	{kind: kindAuthorization, hints: []string{"authorization"}, perLine: true,
		// Any scheme the bearer and basic rules left: Token, Digest,
		// ApiKey, AWS4-HMAC-SHA256 Credential=…, or none.
		re:     regexp.MustCompile(`(?i)\b(?:proxy-)?authorization["']?[ \t]*[:=][ \t]*["']?(?:[A-Za-z][A-Za-z0-9-]*[ \t]+)?(` + unquotedChar + `{12,}(?:[ \t]*,[ \t]*[A-Za-z]+=[^\s,"']+)*)`),
		groups: []int{1}, valid: func(s string) bool { return hasDigit(s) && hasLetter(s) }},
	{kind: kindCookie, hints: []string{"cookie"}, perLine: true,
		re:     regexp.MustCompile(`(?i)\b(?:set-)?cookie["']?[ \t]*:[ \t]*["']?((?:[^\s=;,"']+=[^\s;"']+)(?:;[ \t]*[^\s=;,"']+=[^\s;"']+)*)`),
		groups: []int{1}},
	{kind: kindURLSecretParam, hints: []string{"sig", "token", "key", "secret", "password", "credential", "auth"}, seps: "=",
		// Query parameters that carry a credential or a signature.
		re:     regexp.MustCompile(`(?i)[?&](?:x-amz-signature|x-amz-security-token|x-amz-credential|x-goog-signature|x-goog-credential|signature|sig|access_token|refresh_token|id_token|token|api_key|apikey|client_secret|secret|password|passwd|auth|key)=([^&#\s"'<>]+)`),
		groups: []int{1}, valid: func(s string) bool {
			return len(s) >= 8 && plausibleValue(s) && (hasDigit(s) || strings.ContainsAny(s, "%+/="))
		}},
	{kind: kindConnectionString, hints: []string{"pwd", "accountkey", "sharedaccess"}, perLine: true,
		re:     regexp.MustCompile(`(?i)(?:^|[;\s"'])(?:pwd|accountkey|sharedaccesskey|sharedaccesssignature)[ \t]*=[ \t]*([^;"'\s]+)`),
		groups: []int{1}, valid: plausibleValue},
	{kind: kindSecretLabelChinese, hints: []string{"密码", "口令", "密钥", "秘钥", "私钥", "令牌", "授权码"}, perLine: true,
		// 密码是…, 令牌为…, 密钥用… : an ASCII value after a verb.
		re:     regexp.MustCompile(`(?:密码|口令|密钥|秘钥|私钥|令牌|授权码)(?:是|为|用的是|改成|设为)[ \t]*["'“「]?([A-Za-z0-9!@#$%^&*._+/=~-]{4,})`),
		groups: []int{1}, valid: plausibleValue},
	{kind: kindPassword, late: true, hints: []string{"pass", "secret", "token", "key", "credential", "密码", "口令", "密钥", "秘钥", "私钥", "令牌",
		"contrase", "senha", "mot de passe", "пароль", "パスワード", "비밀번호", "암호"}, perLine: true, seps: kvSeps,
		re:     regexp.MustCompile(`(?i)(?:` + credWord + `|` + credLabels + `)` + kvSep + kvValue),
		groups: []int{1, 2, 3}, valid: plausibleValue},
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
	if len(v) < 3 || notSecrets[strings.ToLower(v)] || envRef.MatchString(v) || codeCall.MatchString(v) {
		return false
	}
	if len(v) < 4 && strings.Trim(v, "0123456789") == "" {
		return false // a small number: a size, a count (maxToken = 128)
	}
	if strings.IndexFunc(v, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0 {
		return false // punctuation only: …, ***, <>
	}
	return strings.Trim(v, v[:1]) != ""
}

// codeCall matches a value that is a call or a composite literal in
// source code rather than a credential: Token = srv.Token(), apiKey =
// os.Getenv(…), token: []byte(…), credentials = []credential{.
var codeCall = regexp.MustCompile(`^(?:\[\]|&)?[A-Za-z_][A-Za-z0-9_.]*[({]`)
