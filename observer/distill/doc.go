// Package distill turns a claimed range of conversation into versioned
// memory operations, and validates those operations before anything is
// written.
//
// A checkpoint (ARCHITECTURE §7) claims a seq range of a session, builds a
// Request (the messages, and at most 20 related entries chosen by
// SelectRelated), calls a Distiller outside any lock, passes the answer
// through Validate and appends what survives as one memory/ops event. So
// replay never calls a model, and nothing a distiller says is written
// unchecked. This package holds the pure pieces: it does no I/O except the
// openai distiller's HTTP request.
//
// # What is learnt
//
// Memory is learnt only from what the user typed: Message.Role "user"
// with Injected false, inside the claimed range [From, To] (To == 0: every
// message given). Assistant text, tool output and injected text (a plugin's
// user-role message, e.g. memory shown back: DSH-HOST.md, source.kind
// plugin) are never learnt. The rules distiller skips them; the openai
// distiller sends them marked ("role":"injected", "[injected — not the
// user]") so the model can read them as context, and Validate refuses any
// op without evidence from a user-typed message. (The engine's checkpoints
// give a distiller no injected message at all: observer/pending.go leaves
// them out of the claim, so these rules are a second guard.)
//
// # Distillers
//
// NewRules is the default: offline, deterministic, explicit statements
// only. NewOpenAI asks any OpenAI-compatible chat-completions endpoint
// (DeepSeek by default: https://api.deepseek.com/v1, deepseek-chat; key
// from $DEEPSEEK_API_KEY, else $DSHMEM_LLM_API_KEY) with the system prompt
// in prompt.md (embedded), response_format json_object and temperature 0.
// The user turn is a header, the related entries and then the messages,
// one JSON object per line — JSON so that a message's text cannot forge
// the tag of another message:
//
//	{"id":"m-db","type":"decision","status":"active","title":"Database: MySQL 8",…}
//	{"seq":12,"eventId":"dsh:s:17","role":"user","text":"…"}
//	{"seq":13,"eventId":"dsh:s:18","role":"injected","note":"[injected — not the user]","text":"…"}
//
// The input is capped whatever the caller passed: messages by CapInput
// (40,000 runes, whole messages, newest kept), entries at 20 and 12 KB as
// rendered. Each attempt has a timeout (default 120 s). Network errors,
// timeouts, 408, 429 and 5xx are retried up to MaxAttempts (5) with waits
// of 1 s, 2 s, 4 s … capped at 30 s; a Retry-After is honoured within the
// same bounds. There is no jitter: one process talks to the endpoint. A
// 4xx other than 408/429 (a bad key) fails at once with an *APIError; an
// answer that is not JSON in the ops schema, or a body over 8 MiB, fails
// with ErrMalformedAnswer and is not retried (the checkpoint is retried
// later).
//
// # Answer format
//
// ParseResult reads {"version":1,"operations":[…]} where an op is
//
//	op                add | revise | supersede | conflict | forget
//	targetId          the entry aimed at (all but add)
//	oldQuote          supersede: verbatim text of the target
//	newQuote          supersede: verbatim text of a user message in range
//	evidenceEventIds  event ids of the user messages the op rests on
//	type title description content tags terms importance confidence reason provenance
//
// The legacy {"memories":[…]} and a bare array are read as adds, a Markdown
// code fence around the JSON is tolerated, and so are lists written as one
// comma-separated string and numbers written as strings. Anything else is
// ErrMalformedAnswer.
//
// # The rules distiller
//
// A user message is cut into statements at line ends, 。！？!? and a '.'
// before a space (not at ';', '—' or '，'). Questions (ending in ?, ？ or
// 吗) are dropped and leading fillers ("OK,", "also", "好的，", "另外")
// removed. Each statement is matched against the patterns below, first
// match wins; English patterns ignore case; what follows the trigger must
// hold a letter or a digit ("remember that ;;" gives nothing). The op's
// content is the statement, verbatim; its evidence is the message's event
// id; its title is derived deterministically: the text after the trigger
// (with a prefix where shown) or the whole statement, white space
// collapsed, closing punctuation dropped, first letter upper-cased for
// English, cut at 80 runes (at a word when possible) with "…". Importance
// is 2, preferences 1.
//
//	pattern              lang  op       trigger (at the start unless noted)                                  example → title
//	en-remember          en    add fact remember that / remember: / keep in mind that                       "remember that the staging DB is on port 5433" → "The staging DB is on port 5433"
//	zh-记住               zh    add fact 记住 / 记一下 / 记下 / 记好 (not 记住了)                                   "记住：部署前跑 make check" → "部署前跑 make check" (procedure)
//	en-prefer            en    add pref I prefer / I'd prefer / I would prefer (not "this", "that", "it")     "I prefer tabs over spaces" → "Prefer tabs over spaces"
//	zh-喜欢偏好习惯          zh    add pref 我喜欢 / 我偏好 / 我习惯 / 我倾向于 (not 这/那/你…)                         "我喜欢用 Go 写后端" → whole statement
//	en-decided           en    add dec  we/I (have) decided (to|that|on)                                     "we decided to use gRPC" → "Use gRPC"
//	en-from-now-on       en    add dec  from now on, / going forward,                                        "From now on, we'll write commit messages in English" → "Write commit …"
//	zh-决定               zh    add dec  (我们)决定 / 定了                                                    "我们决定用 gRPC 做服务间通信" → whole statement
//	zh-以后都用             zh    add dec  以后/今后/从现在起/统一 (都|一律|统一|就) 用/使用/采用                          "以后都用 pnpm" → whole statement
//	en-always-never      en    add rule always … / never … (not "never mind")                               "always run gofmt" → "Always run gofmt"
//	en-must              en    add rule you/we must|should always|never …                                   "You must always sign release tags" → whole statement
//	zh-必须不要禁止          zh    add rule 必须 / 务必 / 不要 / 不许 / 不准 / 禁止 / 一定要 (not 不要紧, 今天/现在…)         "不要用 npm" → whole statement
//	en-not-but           en    corr     anywhere: not X but|—|; Y  (X a name: capital, digit or known tool)  "not MySQL — we moved to PostgreSQL"
//	en-instead-of        en    corr+    use Y instead (of X)                                                  "use PostgreSQL instead of MySQL"
//	en-instead-of-first  en    corr+    instead of X, use Y                                                   "Instead of MySQL, use PostgreSQL"
//	en-switched-to       en    corr+    we/I switched|moved|migrated|changed (from X) to Y                    "we switched from MySQL to PostgreSQL"
//	zh-不是而是             zh    corr     anywhere: 不是X(，)而是|是Y  (X a name, as above; not 是不是)                  "数据库不是MySQL而是PostgreSQL"
//	zh-改用               zh    corr+    anywhere: (不用|不要用 X 了，) 改用|换用 Y                                    "改用 PostgreSQL", "不要用 npm 了，改用 pnpm"
//	zh-从X换成Y             zh    corr+    anywhere: 从 X 换成|迁移到|切换到|换到 Y                                   "数据库从 MySQL 迁移到 PostgreSQL"
//
// A remembered statement is a procedure, not a fact, when it starts with a
// step verb (run, use, build, deploy, check, …), says "before/after …ing",
// or holds 跑, 运行, 执行, 先…再, 之前 or 步骤.
//
// Corrections (corr) are tried first, so "记住：数据库不是MySQL而是PostgreSQL"
// corrects. The corrected entry is looked for among the active Related
// entries: with X named, those holding X verbatim (ignoring case; oldQuote
// is X as the entry spells it), else those sharing the most terms with X;
// without X ("改用 PostgreSQL"), those naming another member of Y's group
// in the alternatives table (databases, JS package managers, Python
// package managers, JS runtimes, RPC styles, tabs/spaces, editors, test
// runners, bundlers, container engines, message brokers: see rules.go)
// and not Y itself. Exactly one entry holding the old words verbatim: a
// supersede (newQuote = the statement, oldQuote = the entry's words, type
// of the entry). Several, or one found by terms only: unclear, a conflict
// with the first (Related order). None: corr+ patterns add the statement
// as a decision; corr patterns give nothing ("not a bug but a feature").
//
// # Validation
//
// Validate applies, to each op in answer order (the output keeps that
// order; the same input gives the same output):
//
//  1. The op name, lower-cased, must be add, revise, supersede, conflict
//     or forget; anything else is rejected.
//  2. Credential-shaped text in any field (sk-… keys, GitHub, Slack and
//     Google tokens, AKIA/ASIA key ids, PEM private keys, JWTs, bearer
//     tokens, URL passwords, password=/secret:/token= values, curl -u) is
//     refused; the Rejected op has its text replaced by "[refused: kind]".
//     The detector is deliberately small: intake has already redacted the
//     messages with the observer's full redactor; this catches what a
//     model invents or reassembles.
//  3. Caps: text trimmed, title cut to 160 runes (white space collapsed),
//     description to 500, content to 4,000 (cuts at rune boundaries, not
//     refusals: a long title is still a good entry); tags and terms lose
//     blanks and repeats and keep the first 8 and 16; importance clamped to
//     0–3, confidence to 0–1; type lower-cased, a plural made singular,
//     an unknown type becomes fact (an add without a type is a fact).
//     Provenance defaults to "distiller".
//  4. Evidence: event ids outside the claimed range are dropped; an op of
//     provenance "distiller" must then cite at least one message the user
//     typed, else it is rejected (it would be learnt from assistant, tool
//     or injected text). An op that cites no evidence at all (the legacy
//     shapes) is given the in-range message sharing the most terms with
//     it, if the user typed that message (ties go to the user) and it
//     shares at least two terms; an op closer to injected, assistant or
//     tool text than to anything the user typed is rejected.
//  5. Target (all but add): required, and must be a Related entry that is
//     not superseded or forgotten. A conflict group id given as a target
//     is rejected: an op aims at one member and never changes another.
//  6. add: needs a title or content. An add whose text has a token Dice
//     (Dice) ≥ 0.68 with an active Related entry of the request's scope
//     (Entry.Scope == Request.Stream) becomes a revise of the closest one.
//     Conflict members are not active, so an add is never redirected onto
//     a conflict group.
//     revise: needs a title, description or content; fields it leaves
//     empty take the target's values (the projector keeps the previous
//     version in the entry's revisions).
//     supersede: newQuote must be a substring of a user-typed message in
//     the claimed range, and oldQuote a substring of the target's own
//     title, description or content (not of another member of its group);
//     both byte for byte. Otherwise it becomes a conflict aimed at the same
//     target, holding the new content, with the failed check in Reason;
//     a supersede without newQuote, title or content is rejected.
//     conflict: needs the new title or content.
//  7. An op without a title gets the first line of its content.
package distill
