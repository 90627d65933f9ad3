// Package observer is the engine of a memory root: the one writer's lock,
// intake (validate, redact, resolve the scope, drop duplicates), the
// ordered fold into the index, and the memory API (entries, remember,
// forget, recall) over it.
//
// Ingest returns, for every appended event, the envelope as the log holds
// it: redacted and stamped with its stream and seq (Outcome.Event). The
// jobs built on the engine live in packages under it and reach it only
// through its exported methods: observer/httpapi (the server),
// observer/broker (session runtimes, context, packets),
// observer/checkpoint (pending work and checkpoints), observer/importer
// (DSH and legacy imports, the watcher), observer/handedit (hand edits of
// projections), observer/bench (benchmarks) and observer/metrics.
//
// # Intake
//
// Every event enters through the same four steps, in this order, whether it
// comes from `dshmem ingest`, the HTTP API or the DSH log reader:
//
//  1. Split (SplitLines): one call is at most MaxIngestBytes (8 MiB),
//     read whole before any line is handed on, so an oversized call is
//     refused as a whole (ErrIngestTooLarge) and never half-ingested. Blank
//     lines are skipped but counted, so line numbers match the input.
//  2. Validate (Validate): each line is checked on its own; a bad line is
//     a *LineError naming the line and the field ("line 3: field \"time\":
//     not RFC 3339: …") and does not stop the lines around it.
//  3. Resolve the stream (ResolveStream, Resolver, StreamForCwd) and drop an event
//     whose id is already in its stream (the engine; the id is the
//     idempotency key, ARCHITECTURE §3).
//  4. Redact (Redactor.Envelope), then append.
//
// # Input envelope
//
// One JSON object per line, the envelope of ARCHITECTURE §3 without seq:
//
//	{"id":"dsh:session-1:17","type":"user/message","time":"2026-08-18T10:00:00.123Z",
//	 "session":"session-1","cwd":"/home/u/proj","data":{"text":"…"}}
//
//	field    rule
//	v        absent, null or 1 (absent means 1); a newer version says "upgrade dshmem"
//	seq      absent, null or 0; anything else: "assigned by dshmem; remove it"
//	id       required, non-blank string, at most 512 bytes
//	type     required, one of events.Types
//	time     required, RFC 3339 (time.RFC3339Nano); kept as sent
//	session  optional string
//	cwd      optional string; must be absolute (POSIX, or a Windows drive path)
//	stream   optional; normally absent. If present it must be a stream name;
//	         with a cwd (the event's or its session's) it must equal the
//	         stream of the scope that cwd resolves to, or the cwd's own key
//	         (then it is used as given); without one it is used as given
//	data     optional JSON object; null counts as absent; kept compacted,
//	         key order and unknown fields preserved
//
// Any other top-level field, a field given twice, invalid UTF-8, trailing
// data or a line over MaxEventBytes (256 KiB) rejects the line. Required
// data fields by type:
//
//	user/message, assistant/message  text (string)
//	tool/call, tool/result           name (non-empty string)
//	compaction/summary               compactionId (non-empty), text (string)
//	memory/remember                  content (non-empty, not only a credential)
//	memory/forget                    entryId (non-empty)
//	file/edit                        path (non-empty), content (string)
//	memory/ops                       ops (array)
//	session/start                    origin, if present: "top" or "subagent"
//
// Null optional fields count as absent, because JavaScript hosts write
// null for "no value". seq 0 is accepted because events.Marshal writes it
// for an envelope that has none yet; re-marshalling an accepted envelope
// gives a line that is accepted again (FuzzValidate checks it).
//
// # Streams
//
// A stream is "global" or "ws-" + the first 20 hex digits of
// sha256(NormalizeCwd(cwd)) (ARCHITECTURE §2): `\` becomes `/`, the path is
// cleaned (`.`, `..`, repeated and trailing slashes), and a path with a
// drive letter is lower-cased whole, so `C:\Users\X\proj\` and
// `c:/users/x/proj` are one stream. An event without a cwd takes its
// session's cwd; with neither, it goes to "global".
//
// A cwd belongs to a scope that may be one of its ancestors (Resolver, in
// scope.go): the cwd itself when it already is a scope, else the nearest
// ancestor scope, else the nearest directory holding .git, else the cwd;
// never across a repository root, and never $HOME or / for a directory
// below them. The envelope keeps the real cwd; the stream is the scope's.
// When intake creates a workspace stream whose first event does not name
// the scope's directory, it writes a scope/register {dir} event first, so
// scope.json records the directory from the log alone.
//
// # Redaction
//
// The Redactor replaces credential-shaped text with "[REDACTED:<kind>]"
// before anything is written (ARCHITECTURE §8): intake redacts every
// event (so the log, the broker, the distiller and every projection see
// only redacted text), and the server redacts the one text that reaches
// the broker without intake, a prompt the host claims. Three layers run
// in order:
//
//  1. Our own rules for the shapes we name ourselves: private-key (PEM
//     and PGP blocks, to the end of the text when the END line is
//     missing), anthropic-key, openai-key (OpenAI and DeepSeek sk-…),
//     github-token (gh[pousr]_, github_pat_), slack-token, google-api-key,
//     aws-access-key-id, aws-secret-key, jwt, bearer-token, basic-auth,
//     url-credentials (scheme://user:PASSWORD@host, scheme://TOKEN@host),
//     cli-password (mysql -pX, sshpass -p, docker login -p, --password X,
//     --api-key X, …), authorization (any other Authorization scheme),
//     cookie (Cookie: / Set-Cookie: name=value), url-secret-param
//     (X-Amz-Signature=, sig=, access_token=, … in a query),
//     connection-string (Pwd=, AccountKey=, SharedAccessKey=) and
//     secret-label-zh (密码是…, 令牌为…).
//  2. The maintained rule set of observer/secretrules: gitleaks' default
//     rules (200+ provider formats — GitLab, Stripe, Hugging Face, npm,
//     PyPI, Vault, SendGrid, DigitalOcean, …), each kind named by its
//     rule id.
//  3. The generic key=value rule, kind password: a key ending in
//     password, passwd, passphrase, secret, token, api key, access key,
//     auth key or credentials or _pass (DB_PASS), or 密码/口令/密钥/秘钥/
//     私钥/令牌, or the word in other languages (Passwort, contraseña,
//     senha, mot de passe, пароль, パスワード, 비밀번호), then = : :=
//     => or ：, then a value; and curl -u user:PASSWORD. It runs last, so
//     GITLAB_TOKEN=glpat-… is named gitlab-pat.
//
// In an event's data, a value whose key names a secret (SecretKey:
// password, token, api_key, X-Api-Key, client_secret, cookie,
// authorization, 密码, …, at any depth; "max_tokens" and "token_count"
// are not) is replaced whole, kind secret-field, and so is every string
// and number inside it.
//
// Only the secret is replaced: `password=hunter2` becomes
// `password=[REDACTED:password]` and `https://user:pw@host` becomes
// `https://user:[REDACTED:url-credentials]@host`; the key and the user
// name stay so the text still reads. Prose stays: a bare "token", "the
// password policy" or "secret sauce" has no key=value shape, and values
// that are common words ("password: required"), empty markers (null,
// ***), or references ($API_KEY, ${{ secrets.X }}, os.getenv(…)) are
// left. On the strings of the DSH session fixtures (11,806, keys
// included: TestRedactDSHFixtures), on testdata/secrets/ordinary.txt,
// near-misses.txt, the MADial-Bench subset in testdata/madial and the
// full MADial-Bench beside the repository (5,048 dialogue and memory
// strings, English and Chinese; TestRedactOrdinaryText, which CI runs) the
// redactor changes nothing; on the repository's own Go source it changes
// 28 of 49,279 lines, most of them its own documentation
// (TestRedactOwnSource holds the rate under 0.1%).
//
// Redaction is idempotent: text inside a placeholder is opaque to every
// rule, and String repeats its rules until a pass changes nothing. A value
// that starts with a placeholder is left whole, since an earlier, more
// specific rule has already taken the secret (in
// `x-access-token:ghp_…@github.com` the github-token rule takes the token
// and the key=value rule then leaves "@github.com" alone). Envelope
// redacts every string inside data, keys included, walking the JSON
// tokens so key order and number spelling survive; id, type, time,
// session and cwd are left alone. An explicit memory whose content is
// nothing but credentials (OnlySecret) is refused by Validate.
//
// Limits, by design: secrets with no recognisable shape (a bare random
// password in prose) are not found; an unquoted key=value value is cut at
// white space, quotes, , ; & ) } < > and CJK text; the size caps apply to
// the input line, and redaction may make an event somewhat longer.
package observer
