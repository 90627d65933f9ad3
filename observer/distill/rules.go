package distill

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"dshmem/events/payload"
	"dshmem/sqlstore/tokenize"
)

// RulesModel names the version of the pattern list; it goes into the
// memory/ops event as the model, so a change of the list is visible in
// the log. Bump it when the table in doc.go changes.
const RulesModel = "rules-v1"

// NewRules returns the offline, deterministic distiller: it learns only
// from explicit memory statements the user typed (see the pattern table
// in the package documentation).
func NewRules() Distiller { return rulesDistiller{} }

type rulesDistiller struct{}

func (rulesDistiller) Name() string  { return "rules" }
func (rulesDistiller) Model() string { return RulesModel }

// pattern is one row of the table in doc.go.
type pattern struct {
	name string // stable id, used in Op.Reason and in the tests
	lang string // "en" | "zh"
	re   *regexp.Regexp
	typ  string // entry type of an add

	// payload is the submatch the title comes from; 0 means the whole
	// statement. titlePrefix goes in front of it ("Prefer ").
	payload     int
	titlePrefix string
	// reject vetoes a match on its payload (a demonstrative, "mind" in
	// "never mind", …): what keeps false positives down.
	reject func(payload string) bool

	// correction patterns supersede an existing entry: oldGroup and
	// newGroup are the submatches naming the old and the new thing
	// (oldGroup 0: not said). fallbackAdd makes a correction that finds
	// no entry to correct an add of a decision ("改用 pnpm" on a fresh
	// memory); without it such a statement gives nothing ("not a bug
	// but a feature").
	correction         bool
	oldGroup, newGroup int
	fallbackAdd        bool

	importance int
}

// Regexps are matched against one statement with its leading fillers
// removed (see split); the English ones are case-insensitive.
var patterns = []pattern{
	// Corrections come first: "记住：数据库不是MySQL而是PostgreSQL" is a correction.
	{name: "en-not-but", lang: "en", correction: true, oldGroup: 1, newGroup: 2, typ: payload.TypeDecision, importance: 2,
		re:     regexp.MustCompile(`(?i)\bnot\s+(?:the\s+|a\s+|an\s+)?([^,;.!?—–]{1,40}?)\s*,?\s*(?:\bbut\b|—|–|--|;)\s*(?:rather\s+|instead\s+)?(\S.*)$`),
		reject: notNamedThing},
	{name: "en-instead-of", lang: "en", correction: true, oldGroup: 2, newGroup: 1, fallbackAdd: true, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`(?i)^(?:we\s+|i\s+)?(?:now\s+|should\s+)?use\s+(\S.*?)\s+instead(?:\s+of\s+(\S.*?))?$`)},
	{name: "en-instead-of-first", lang: "en", correction: true, oldGroup: 1, newGroup: 2, fallbackAdd: true, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`(?i)^instead\s+of\s+(\S.*?),?\s+(?:we\s+|i\s+)?(?:now\s+)?use\s+(\S.*)$`)},
	{name: "en-switched-to", lang: "en", correction: true, oldGroup: 1, newGroup: 2, fallbackAdd: true, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`(?i)^(?:we|i)(?:\s+have|'ve|’ve)?\s+(?:switched|moved|migrated|changed)\s+(?:over\s+)?(?:from\s+(\S.*?)\s+)?to\s+(\S.*)$`)},
	{name: "zh-不是而是", lang: "zh", correction: true, oldGroup: 1, newGroup: 2, typ: payload.TypeDecision, importance: 2,
		re:     regexp.MustCompile(`(?:^|[^是])不是\s*([^，,。；;、\s][^，,。；;、]{0,29}?)\s*[，,]?\s*(?:而是|是)\s*(\S.*)$`),
		reject: notNamedThing},
	{name: "zh-改用", lang: "zh", correction: true, oldGroup: 1, newGroup: 2, fallbackAdd: true, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`(?:(?:不用|不再用|别用|不要用|不要再用)\s*(\S.*?)\s*了?\s*[，,]?\s*)?(?:改用|换用)\s*(\S.*)$`)},
	{name: "zh-从X换成Y", lang: "zh", correction: true, oldGroup: 1, newGroup: 2, fallbackAdd: true, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`从\s*(\S.*?)\s*(?:换成|迁移到|切换到|换到|迁到)\s*(\S.*)$`)},

	{name: "en-remember", lang: "en", typ: payload.TypeFact, payload: 1, importance: 2,
		re: regexp.MustCompile(`(?i)^(?:please\s+)?(?:remember|keep\s+in\s+mind)\s*(?:that\s+|[:：,—-]\s*)(\S.*)$`)},
	{name: "zh-记住", lang: "zh", typ: payload.TypeFact, payload: 1, importance: 2,
		re:     regexp.MustCompile(`^(?:请|你)?(?:帮我)?(?:记住|记一下|记下|记好)\s*[：:，,]?\s*(\S.*)$`),
		reject: rejectPrefixes("了", "吗", "没")},

	{name: "en-always-never", lang: "en", typ: payload.TypeRule, importance: 2,
		re:      regexp.MustCompile(`(?i)^(?:(?:from\s+now\s+on|going\s+forward)\s*,?\s*)?(?:please\s+)?(?:always|never)\s+(\S.*)$`),
		payload: 0, reject: rejectWords("mind", "again", "heard", "seen", "thought", "knew", "expected", "been")},
	{name: "en-must", lang: "en", typ: payload.TypeRule, importance: 2,
		re: regexp.MustCompile(`(?i)^(?:you|we)\s+(?:must|should)\s+(?:always|never)\s+(\S.*)$`)},
	{name: "zh-必须不要禁止", lang: "zh", typ: payload.TypeRule, importance: 2,
		re: regexp.MustCompile(`^(?:(?:以后|今后|从现在起|从今以后)\s*[，,]?\s*)?(?:请|都|永远|任何时候都|一定)?\s*(?:必须|务必|不要|不许|不准|禁止|千万不要|千万别|永远不要|一定要)\s*(\S.*)$`),
		// A rule holds beyond today: "必须今天修好" is a request, not a rule.
		reject: rejectPrefixes("紧", "了", "客气", "担心", "着急", "急", "今天", "现在", "马上", "立刻", "这次", "这个", "这里")},

	{name: "en-decided", lang: "en", typ: payload.TypeDecision, payload: 1, importance: 2,
		re: regexp.MustCompile(`(?i)^(?:we|i)(?:\s+have|'ve|’ve)?\s+decided\s+(?:to\s+|that\s+|on\s+)?(\S.*)$`)},
	{name: "en-from-now-on", lang: "en", typ: payload.TypeDecision, payload: 1, importance: 2,
		re: regexp.MustCompile(`(?i)^(?:from\s+now\s+on|going\s+forward|from\s+here\s+on)\s*,?\s+(?:we(?:'ll|’ll|\s+will)\s+)?(\S.*)$`)},
	{name: "zh-决定", lang: "zh", typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`^(?:我们|我)?(?:已经|最终|最后)?(?:决定|定了)了?\s*[：:，,]?\s*(\S.*)$`)},
	{name: "zh-以后都用", lang: "zh", typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`^(?:以后|今后|从现在起|从今以后|统一)\s*[，,]?\s*(?:都|一律|统一|就)?\s*(?:用|使用|采用)\s*(\S.*)$`)},

	{name: "en-prefer", lang: "en", typ: payload.TypePreference, payload: 1, titlePrefix: "Prefer ", importance: 1,
		re:     regexp.MustCompile(`(?i)^i(?:'d|’d|\s+would|\s+really|\s+generally|\s+usually|\s+always)?\s+prefer\s+(\S.*)$`),
		reject: rejectWords("this", "that", "it", "these", "those", "the first", "the second", "the former", "the latter", "yours", "your")},
	{name: "zh-喜欢偏好习惯", lang: "zh", typ: payload.TypePreference, importance: 1,
		re:     regexp.MustCompile(`^我(?:比较|更|一般|通常|平时|个人)?(?:更)?(?:喜欢|偏好|偏爱|习惯|倾向于|倾向)\s*(\S.*)$`),
		reject: rejectPrefixes("这", "那", "你", "它", "他", "她")},
}

// notNamedThing vetoes the old thing of an unanchored correction ("not X
// but Y", "不是X而是Y") unless it looks like the name of something: it has
// an upper-case letter or a digit, or is in the alternatives table. So
// "not MySQL but PostgreSQL" corrects, "not a bug but a feature" and
// "not sure but …" do not.
func notNamedThing(x string) bool {
	for _, r := range x {
		if unicode.IsUpper(r) || unicode.IsDigit(r) {
			return false
		}
	}
	return len(alternativesOf(tokenize.Terms(x))) == 0
}

// hasWord reports whether s holds a letter or a digit (any script): a
// payload of punctuation alone ("remember that ;;") says nothing.
func hasWord(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

// rejectWords vetoes a payload that starts with one of the words.
func rejectWords(words ...string) func(string) bool {
	return func(p string) bool {
		l := strings.ToLower(p)
		for _, w := range words {
			if l == w || strings.HasPrefix(l, w+" ") || strings.HasPrefix(l, w+",") || strings.HasPrefix(l, w+".") {
				return true
			}
		}
		return false
	}
}

// rejectPrefixes vetoes a payload that starts with one of the prefixes.
func rejectPrefixes(prefixes ...string) func(string) bool {
	return func(p string) bool {
		for _, x := range prefixes {
			if strings.HasPrefix(p, x) {
				return true
			}
		}
		return false
	}
}

func (rulesDistiller) Distill(ctx context.Context, req Request) (Result, error) {
	res := Result{Version: ResultVersion, Operations: []Op{}}
	for _, m := range req.Messages {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		// Only what a person typed: never assistant or tool text, never
		// injected memory (DSH-HOST: source.kind plugin).
		if !m.userTyped() || !req.inRange(m) {
			continue
		}
		for _, s := range split(m.Text) {
			op, ok := distillStatement(req, m, s)
			if !ok || duplicateOp(res.Operations, op) {
				continue
			}
			res.Operations = append(res.Operations, op)
		}
	}
	return res, nil
}

// distillStatement matches one statement against the pattern table; the
// first pattern that matches and is not vetoed decides.
func distillStatement(req Request, m Message, s string) (Op, bool) {
	for _, p := range patterns {
		sub := p.re.FindStringSubmatch(s)
		if sub == nil {
			continue
		}
		if p.correction {
			oldText, newText := "", cleanPhrase(sub[p.newGroup])
			if p.oldGroup > 0 {
				oldText = cleanPhrase(sub[p.oldGroup])
			}
			if newText == "" || (p.reject != nil && p.reject(oldText)) {
				continue
			}
			return correction(req, m, s, oldText, newText, p)
		}
		rest := strings.TrimSpace(sub[p.payload])
		if p.payload == 0 && len(sub) > 1 {
			// The veto looks at what follows the trigger even when the
			// title is the whole statement.
			rest = strings.TrimSpace(sub[1])
		}
		if utf8.RuneCountInString(rest) < 2 || !hasWord(rest) || (p.reject != nil && p.reject(rest)) {
			continue
		}
		op := Op{
			Op: payload.OpAdd, Type: p.typ, Content: s,
			EvidenceEventIDs: []string{m.EventID},
			Importance:       nonZero(p.importance), Confidence: new(0.9),
			Reason:     "rules: " + p.name,
			Provenance: payload.ProvenanceDistiller,
		}
		if p.payload == 0 {
			op.Title = makeTitle("", s, p.lang)
		} else {
			op.Title = makeTitle(p.titlePrefix, rest, p.lang)
		}
		if p.typ == payload.TypeFact && procedural(rest) {
			op.Type = payload.TypeProcedure
		}
		return op, true
	}
	return Op{}, false
}

// correction turns a correction statement into a supersede of the entry it
// corrects, a conflict when that entry is unclear, an add (fallbackAdd)
// or nothing.
func correction(req Request, m Message, s, oldText, newText string, p pattern) (Op, bool) {
	op := Op{
		Type: p.typ, Title: makeTitle("", s, p.lang), Content: s,
		NewQuote: s, EvidenceEventIDs: []string{m.EventID},
		Importance: nonZero(p.importance), Provenance: payload.ProvenanceDistiller,
	}
	targets, quotes, verbatim := findCorrected(req.Related, oldText, newText)
	switch {
	case len(targets) == 1 && verbatim:
		op.Op, op.TargetID, op.OldQuote = payload.OpSupersede, targets[0].ID, quotes[0]
		op.Confidence = new(0.9)
		op.Reason = "rules: " + p.name
		if targets[0].Type != "" {
			op.Type = targets[0].Type
		}
	case len(targets) >= 1:
		// Unclear: several entries fit, or the one that fits does not hold
		// the old words verbatim. Both stay, as a conflict.
		op.Op, op.TargetID = payload.OpConflict, targets[0].ID
		if verbatim {
			op.OldQuote = quotes[0]
		}
		op.Confidence = new(0.5)
		op.Reason = "rules: " + p.name + ": unclear which entry is corrected"
		if targets[0].Type != "" {
			op.Type = targets[0].Type
		}
	case p.fallbackAdd:
		op.Op, op.NewQuote = payload.OpAdd, ""
		op.Confidence = new(0.8)
		op.Reason = "rules: " + p.name + ": no related entry to correct"
	default:
		return Op{}, false
	}
	return op, true
}

// findCorrected returns the active related entries a correction aims at,
// best first, with the old words as each spells them, and whether those
// are verbatim text of the entry.
//
// With the old thing named (oldText): the entries holding it verbatim
// (case-insensitively; the quote keeps the entry's spelling); failing
// that, the entries sharing the most terms with it (not verbatim).
// Without it ("改用 PostgreSQL"): the entries naming a sibling of the new
// thing in the alternatives table (MySQL for PostgreSQL, npm for pnpm)
// and not the new thing itself.
func findCorrected(related []Entry, oldText, newText string) (targets []Entry, quotes []string, verbatim bool) {
	var active []Entry
	for _, e := range related {
		if e.active() {
			active = append(active, e)
		}
	}
	if oldText != "" {
		for _, e := range active {
			if q := findFoldIn(e, oldText); q != "" {
				targets, quotes = append(targets, e), append(quotes, q)
			}
		}
		if len(targets) > 0 {
			return targets, quotes, true
		}
		oldTerms := tokenize.Terms(oldText)
		best := 0
		for _, e := range active {
			n := overlap(oldTerms, tokenize.Terms(entryText(e)))
			switch {
			case n == 0 || n < best:
			case n > best:
				best, targets = n, []Entry{e}
			default:
				targets = append(targets, e)
			}
		}
		return targets, nil, false
	}
	newTerms := tokenize.Terms(newText)
	siblings, own := alternativesOf(newTerms), aliasesOf(newTerms)
	for _, e := range active {
		terms := tokenize.Terms(entryText(e))
		if overlap(terms, own) > 0 {
			continue // already names the new thing
		}
		for _, sib := range siblings {
			if overlap(terms, []string{sib}) == 0 {
				continue
			}
			if q := findFoldIn(e, sib); q != "" {
				targets, quotes = append(targets, e), append(quotes, q)
				break
			}
		}
	}
	return targets, quotes, len(targets) > 0
}

// findFoldIn returns the first case-insensitive occurrence of needle in
// e's title, description or content, as e spells it, or "".
func findFoldIn(e Entry, needle string) string {
	for _, hay := range []string{e.Title, e.Description, e.Content} {
		if q := findFold(hay, needle); q != "" {
			return q
		}
	}
	return ""
}

func findFold(hay, needle string) string {
	if needle == "" {
		return ""
	}
	n := len(needle)
	for i := range hay {
		if i+n <= len(hay) && strings.EqualFold(hay[i:i+n], needle) {
			return hay[i : i+n]
		}
	}
	return ""
}

func overlap(a, b []string) int {
	n := 0
	for _, x := range a {
		if slices.Contains(b, x) {
			n++
		}
	}
	return n
}

// alternatives are groups of interchangeable tools: naming one as the new
// choice makes an entry naming another of its group the corrected one.
// Each member is a list of aliases (tokenize terms, lower case).
var alternatives = [][][]string{
	{{"mysql"}, {"mariadb"}, {"postgresql", "postgres"}, {"sqlite", "sqlite3"}, {"mongodb", "mongo"}, {"oracle"},
		{"sqlserver", "mssql"}, {"tidb"}, {"cockroachdb"}, {"clickhouse"}, {"dynamodb"}, {"cassandra"}},
	{{"npm"}, {"pnpm"}, {"yarn"}, {"bun"}},
	{{"pip"}, {"poetry"}, {"uv"}, {"conda"}, {"pipenv"}},
	{{"node", "nodejs"}, {"deno"}, {"bun"}},
	{{"grpc"}, {"rest"}, {"graphql"}, {"thrift"}},
	{{"tabs"}, {"spaces"}},
	{{"vim"}, {"neovim", "nvim"}, {"emacs"}, {"vscode"}},
	{{"jest"}, {"vitest"}, {"mocha"}},
	{{"webpack"}, {"vite"}, {"rollup"}, {"esbuild"}, {"parcel"}},
	{{"docker"}, {"podman"}},
	{{"kafka"}, {"rabbitmq"}, {"nats"}},
}

// alternativesOf returns the aliases of every other member of each group
// that one of terms belongs to.
func alternativesOf(terms []string) []string {
	var out []string
	for _, group := range alternatives {
		own := -1
		for i, member := range group {
			if overlap(member, terms) > 0 {
				own = i
				break
			}
		}
		if own < 0 {
			continue
		}
		for i, member := range group {
			if i != own {
				for _, a := range member {
					if !slices.Contains(out, a) {
						out = append(out, a)
					}
				}
			}
		}
	}
	return out
}

// aliasesOf returns every alias of the members terms name.
func aliasesOf(terms []string) []string {
	var out []string
	for _, group := range alternatives {
		for _, member := range group {
			if overlap(member, terms) > 0 {
				out = append(out, member...)
			}
		}
	}
	return out
}

// cleanPhrase trims a captured thing of space, quotes, articles and the
// punctuation and particles that end a statement.
func cleanPhrase(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimRight(s, " .。!！了吧呢啊")
	s = strings.Trim(s, " \"'`“”‘’「」")
	for _, a := range []string{"the ", "a ", "an ", "The ", "A ", "An "} {
		s = strings.TrimPrefix(s, a)
	}
	return strings.TrimSpace(s)
}

var (
	procedureEN = regexp.MustCompile(`(?i)^(?:run|use|call|build|deploy|restart|execute|check|always|never|first)\b|\b(?:before|after)\s+\w+ing\b|\bthen\s+run\b`)
	procedureZH = regexp.MustCompile(`跑|运行|执行|先.*再|之前|步骤`)
)

// procedural reports whether a remembered statement is a procedure (a
// step to take) rather than a fact.
func procedural(s string) bool { return procedureEN.MatchString(s) || procedureZH.MatchString(s) }

// maxRulesTitleRunes is where the rules distiller cuts a title; Validate's cap
// (160) is the hard limit.
const maxRulesTitleRunes = 80

// makeTitle derives a title from a statement: prefix + text, white space
// collapsed, the closing punctuation dropped, the first letter upper-cased
// (English), cut at 80 runes — at the last space when there is one in the
// second half — with "…".
func makeTitle(prefix, text, lang string) string {
	t := strings.Join(strings.Fields(text), " ")
	t = strings.TrimRight(t, " .。!！;；,，")
	if prefix == "" && lang == "en" && t != "" {
		r, n := utf8.DecodeRuneInString(t)
		t = string(unicode.ToUpper(r)) + t[n:]
	}
	t = prefix + t
	if utf8.RuneCountInString(t) <= maxRulesTitleRunes {
		return t
	}
	cut := TruncateRunes(t, maxRulesTitleRunes-1)
	if i := strings.LastIndexByte(cut, ' '); i > len(cut)/2 {
		cut = cut[:i]
	}
	return cut + "…"
}

// duplicateOp reports whether ops already holds an op with the same
// effect (op, target, content).
func duplicateOp(ops []Op, o Op) bool {
	for _, x := range ops {
		if x.Op == o.Op && x.TargetID == o.TargetID && x.Content == o.Content {
			return true
		}
	}
	return false
}
