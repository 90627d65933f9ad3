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
// Before looking for statements, a user message loses what the user did
// not write: fenced code blocks, lines quoted with '>', indented code,
// log lines (a timestamp or a level first, "npm ERR!", "$ ", stack
// frames, "Traceback", "Caused by:", "…Error:", "错误："), blocks between
// a tag and its closing tag (<system-reminder>, <memory>…), and memory a
// host shows back ("## Memory", "Relevant memory:", "相关记忆：" and the
// list under it). Each dropped part becomes a line end, so every statement
// is still verbatim text of the message.
//
// What is left is cut into statements at line ends, 。！？!? and a '.'
// before a space (not at ';', '—', '，', nor in "./..." or an ellipsis), so
// "不是 MySQL，而是 PostgreSQL 16，我们上个月已经迁移过去了" stays one
// statement. Questions (ending in ?, ？ or 吗) are dropped and leading
// fillers ("OK,", "also", "FYI", "好的，", "另外") removed. A statement is
// then skipped when it is (filter.go):
//
//	question       starts with what/why/how/is/can/should/do we…; 是不是, 能不能, 为什么, 什么, 哪个, A 还是 B, 来着, ends in 呢
//	hypothetical   what if, if, suppose, say we, imagine, we could, at some point…; 如果, 假如, 要是, 万一, 的话, 将来, 说不定, 以后可以
//	joke           lol, haha, /s, "what could go wrong", 🙃 🙄 😂, "sure, let's…"; 哈哈, 呵呵, 开玩笑, 反正也不会
//	another project  my side/old/previous project, job or company, my friend's, the other repo, another service; 另一个项目, 上家公司, 朋友, 跟这个没关系
//	negated        never said, not saying, not moving off / no need to switch…; 没说过, 不是说, 不会…换, 没必要…换
//	reported       says/said/wrote/docs/message followed by a quote; 说, 写着, 原话, 文档 followed by a quote
//
// Each remaining statement is matched against the patterns below, first
// match wins (patterns.go); English patterns ignore case; what follows the
// trigger must hold a letter or a digit ("remember that ;;" gives
// nothing). The op's content is the statement, verbatim; its evidence is
// the message's event id; its title is derived deterministically: the text
// after the trigger (with a prefix where shown) or the whole statement,
// white space collapsed, closing punctuation dropped, first letter
// upper-cased for English, cut at 80 runes (at a word when possible) with
// "…". Importance is 2, preferences 1.
//
//	pattern              op       trigger (anywhere unless ^)                                  example
//	en-forget            forget   ^forget (about) (what I said about | the note about | that) X  "Forget what I said about vim"
//	en-delete-note       forget   ^delete/remove/drop the memory/note/entry about X             "Delete the note about the S3 bucket"
//	en-forget-it         forget   ^X, forget it                                                  "That thing about Conventional Commits, forget it"
//	zh-忘掉那条             forget   那条/记忆/记录 … 忘/删/不用记, or 忘掉/删掉 … 那条                        "关于 VS Code 的那条记忆删掉吧"
//	en-not-but           corr     not X but|—|; Y  (X a name: capital, digit, -_./ or known tool) "not MySQL — we moved to PostgreSQL"
//	en-not-its           corr     not/isn't/no longer X (anymore), it's|they|we (use) Y          "The cache isn't Memcached, it's Redis"
//	en-no-longer         corr     no longer X — Y                                                "No longer Vault — secrets are in SOPS"
//	en-not-comma         corr     not X, Y                                                       "No no, not webpack, esbuild"
//	en-instead-of        corr+    ^use Y instead (of X)                                          "use PostgreSQL instead of MySQL"
//	en-instead-of-first  corr+    ^instead of X, use Y                                           "Instead of MySQL, use PostgreSQL"
//	en-switched-to       corr+    ^we/I switched|moved|migrated|changed|upgraded (from X) to Y    "We upgraded to Go 1.22"
//	en-from-to           corr+    switched|moved|migrated|renamed… from|off|out of X to|into Y    "we migrated the backend from Node 18 to Node 20"
//	en-replaced-with     corr+    replaced|dropped X with|in favour of Y                         "We replaced GORM with sqlc"
//	en-replaced-by       corr     ^X was replaced by Y  (X may name what changed)                "The staging box was replaced by staging-2"
//	en-y-replaced-x      corr     ^Y replaced|superseded X                                       "PostgreSQL replaced MySQL last year"
//	en-deprecated        corr     ^X is deprecated|decommissioned|gone|outdated… (, Y)  (X may name what changed) "staging-1 was decommissioned, use staging-2"
//	en-these-days        corr     ^Y these days|nowadays$                                        "It's Python 3.12 these days"
//	en-reversed          corr     ^Y, not|rather than|instead of X                               "Production is in eu-west-1, not us-east-1"
//	en-moved-to          corr+    switched|moved|migrated… (…) to Y                              "Switched the frontend bundler to Vite"
//	en-is-now            corr     … is/are now (called) Y                                        "The main branch is now called main"
//	en-now-runs          corr     … now runs/lives/uses/goes (on) Y                              "CI now runs on GitHub Actions"
//	en-actually          corr     ^actually / (small) correction / scratch that / that's no longer true … "actually it's 5433 now"
//	en-now               corr     … now / these days / anymore …  (not what the user is doing)  "btw CI is on GitHub Actions now"
//	zh-不是而是             corr     不是|不在|不用|没用 X(了)(，)而是|是|在|现在用|用的是|改用 Y  (X a name or held by an entry) "数据库不是MySQL而是PostgreSQL"
//	zh-而不是              corr     ^Y(，)(而)不是|不在|不要用|不再是 X                                 "我们用的是 poetry，不是 pip"
//	zh-替换               corr     (用) Y 替换|替代|取代 了 X                                          "用 etcd 替换了 Consul"
//	zh-弃用               corr     ^X (已经) 弃用|下线|过时|淘汰 了 (，Y)  (X may name what changed)          "Consul 已经弃用了，现在用 etcd"
//	zh-改用               corr+    (不用|不要用 X 了，) 改用|换用 Y                                     "不要用 npm 了，改用 pnpm"
//	zh-从X换成Y             corr+    从 X 换成|迁移到|切换到|改成|升级到 Y                                "主分支已经从 master 改成 main 了"
//	zh-把X换成Y             corr     把 X 换成|迁移到|改成 Y  (X may name what changed)                    "我们把 CI 迁移到了 GitLab CI"
//	zh-X改成Y              corr     ^X (已经|都) 改成|换成|升级到|交给|挪到 Y  (X may name what changed)      "日志改成 Loki 了"
//	zh-现在是              corr     ^X 现在是|用|跑在|在 Y  (X names what changed)                       "CI 现在跑在 GitHub Actions 上"
//	zh-被取代              corr     ^X (早就) 被 Y 取代|替换|换掉 了                                      "Jest 早就被 Vitest 取代了"
//	zh-已经               corr     … 现在|已经|早就|如今 …  (not what the user is doing)                "CI 已经在 GitHub Actions 上了"
//	zh-其实               corr     其实|实际上|更正一下|纠正一下|应该是|说错了|不对 …                          "其实是 5433，上周改的"
//	en-remember          add fact ^remember that / remember: / keep in mind that / note that          "remember that the staging DB is on port 5433" → "The staging DB is on port 5433"
//	en-remember-to       add proc ^remember to / don't forget to                                   "Remember to run make migrate before starting the server"
//	zh-记住               add fact ^记住 / 记一下 / 记下 / 记好 / 注意 (not 记住了)                          "记住：部署前跑 make check" → "部署前跑 make check" (procedure)
//	en-always-never      add rule ^always … / never … (not "never mind")                        "always run gofmt" → "Always run gofmt"
//	en-must              add rule ^you/we must|should always|never|not …                         "You must always sign release tags"
//	en-dont              add rule ^(please) don't|do not (ever) … (not don't worry/know…)        "Don't add new dependencies without asking"
//	en-make-sure         add rule ^make sure / be sure / ensure (to) …                           "Make sure to always use parameterized SQL queries"
//	zh-从现在起             add dec  ^从现在起 / 从今以后 / 从今天起 …                                     "从现在起，每个迁移都要带回滚脚本"
//	zh-以后都用             add dec  ^以后/今后/从现在起/统一 (…都|一律|统一) 用/使用/采用/走/放在/手写          "以后都用 pnpm"
//	zh-必须不要禁止          add rule 必须/务必/不要/不许/不准/禁止/千万别/一定要/绝对不能/严禁 (not 不要紧, 今天/现在…) "不要用 npm"
//	en-decided           add dec  ^we/I/the team (have) decided|agreed|chose|opted (to|that|on)   "we decided to use gRPC" → "Use gRPC"
//	en-lets              add dec  ^let's / we're / we'll go with|use|standardize on|stick with    "We're going with Postgres 16 for billing"
//	en-decision-is       add dec  ^the decision|plan|consensus is (to)                            "The decision is to keep the monolith for now"
//	en-from-now-on       add dec  ^from now on, / going forward,                                  "From now on, we'll write commit messages in English"
//	en-from-now-on-end   add dec  … from now on / going forward$                                  "Commit messages are written in English from now on"
//	zh-决定               add dec  决定/定了/就定/商定/商量好了/就选/就用/敲定                              "我们决定用 gRPC 做服务间通信"
//	en-prefer            add pref ^I (would|really…) prefer (not "this", "that", "it")            "I prefer tabs over spaces" → "Prefer tabs over spaces"
//	en-like              add pref ^I like|love|'d rather|don't like …                           "I'd rather have fewer dependencies"
//	en-my-preference     add pref ^my preference is / my preference:                            "My preference is snake_case for SQL column names"
//	zh-喜欢偏好习惯          add pref 我(比较|更|个人…)喜欢/偏好/习惯/倾向/不喜欢/宁愿/希望 (not 这/那/你…)      "我喜欢用 Go 写后端"
//
// A statement none of them takes is still learnt when it plainly states
// how things are (implicit.go): it names something concrete (a name, a
// number, a path or a noun of the trade), is at most 40 words or 200
// runes, is not hedged ("might", "I think", "好像", "可能"), does not ask
// for something now or open with a demonstrative ("That's from…", "这是…"),
// and, for a fact, has a verb of state and says nothing transient
// ("failing", "again", "今天", "挂了"). Its type, and that of a remembered
// statement: fix when it says what solved a problem ("fixed", "went away",
// "was caused by", "解决了", "就好了", "是因为"), else procedure when it
// gives steps ("to X: run…", "before …ing", "then run", "步骤", "先…再",
// "之前要"), else architecture when it says how parts talk ("talks to",
// "goes through", "owns its own", "通过", "调用", "微服务"), else fact.
// Reasons name the pattern, "implicit-<type>" for these.
//
// A message that asks for something now (a question anywhere, or a line
// starting with reply/answer/create/list/fix/explain…, "right now",
// "exactly once", 帮我, 请你…) gives no en-dont, en-make-sure or
// implicit op: there "Do not call tools" is about the task.
//
// Corrections (corr) come before the adds, so "记住：数据库不是MySQL而是
// PostgreSQL" corrects. The corrected entry is looked for among the active
// Related entries (correct.go): with X named, those holding X verbatim
// (ignoring case; oldQuote is X as the entry spells it), else the one
// holding a number of X verbatim ("18" of "Node 18"), else — when X may
// name what changed — the one sharing the most terms with X, else those
// sharing the most terms with X (not verbatim); without X, those naming
// another member of Y's group in the alternatives table (databases,
// caches, package managers, runtimes, RPC styles, editors, test runners,
// bundlers, container engines, message brokers, CI systems, log stores,
// ORMs, linters, branch names, languages, clouds, proxies, frontends,
// config and secret stores: see alternatives.go) and not Y itself; failing
// that, for the rows marked so in patterns.go (slotFallback: "actually",
// "now", "these days", 改用, 其实, 已经…), the one entry sharing the
// most content terms with the statement (or with the assistant's message
// before it, for "actually it's 5433") that lacks one of the statement's
// names or numbers. When only a marker says a statement corrects
// ("actually", "now", "其实", "已经"), an entry found by a sibling must
// also share what the statement is about, or the assistant's message
// before it must hold the old value: "the MySQL slow log is now
// attached" corrects no PostgreSQL entry. When several entries hold the
// old words, the one the rest of the statement names is taken ("the shop
// database is not MySQL"). Exactly one entry holding the old words verbatim: a
// supersede (newQuote = the statement, oldQuote = the entry's words: X, a
// sibling of Y, a number the statement replaces, or the entry's title;
// type of the entry). Several, one found by terms only, or a hedged
// statement ("not sure", "I think", "好像", "不确定"): a conflict with the
// first. None: corr+ patterns add the statement as a decision; the others
// let the next pattern try, and the statement gives no implicit op ("not
// a bug but a feature").
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
