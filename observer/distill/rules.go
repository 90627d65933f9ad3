package distill

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"

	"dshmem/events/payload"
	"dshmem/sqlstore/tokenize"
)

// RulesModel names the version of the pattern list; it goes into the
// memory/ops event as the model, so a change of the list is visible in
// the log. Bump it when the table in doc.go changes.
const RulesModel = "rules-v2"

// NewRules returns the offline, deterministic distiller: it learns only
// from explicit memory statements the user typed (see the pattern table
// in the package documentation).
func NewRules() Distiller { return rulesDistiller{} }

type rulesDistiller struct{}

func (rulesDistiller) Name() string  { return "rules" }
func (rulesDistiller) Model() string { return RulesModel }

// notNamedThing vetoes the old thing of an unanchored correction ("not X
// but Y", "不是X而是Y") unless it looks like the name of something: it has
// an upper-case letter or a digit, or is in the alternatives table. So
// "not MySQL but PostgreSQL" corrects, "not a bug but a feature" and
// "not sure but …" do not.
func notNamedThing(x string) bool {
	for _, r := range x {
		if unicode.IsUpper(r) || unicode.IsDigit(r) || strings.ContainsRune("-_./", r) {
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
		text := userWords(m.Text)
		task := asksNow(text)
		for _, s := range split(text) {
			if skipStatement(s, statementLang(s)) != "" {
				continue
			}
			op, ok := distillStatement(req, m, s, task)
			if !ok || duplicateOp(res.Operations, op) {
				continue
			}
			res.Operations = append(res.Operations, op)
		}
	}
	return res, nil
}

// distillStatement matches one statement against the pattern table; the
// first pattern that matches and is not vetoed decides. A statement no
// pattern takes may still be a plain statement of fact (implicitAdd).
// task says the message asks for something now: taskScoped rows and
// plain statements are not taken from it.
func distillStatement(req Request, m Message, s string, task bool) (Op, bool) {
	lang := statementLang(s)
	corrected := false // a correction matched but found nothing to correct
	for _, p := range patterns {
		if task && p.taskScoped {
			continue
		}
		sub := p.re.FindStringSubmatch(s)
		if sub == nil {
			continue
		}
		switch {
		case p.forget:
			if op, ok := forgetOp(req, m, s, p); ok {
				return op, true
			}
			continue
		case p.correction:
			if p.weakCue && activityRe.MatchString(s) {
				continue
			}
			oldText, newText := "", cleanPhrase(sub[len(sub)-1])
			if p.newGroup > 0 {
				newText = cleanPhrase(sub[p.newGroup])
			}
			if p.oldGroup > 0 {
				oldText = cleanPhrase(sub[p.oldGroup])
			}
			if newText == "" && p.oldGroup == 0 {
				continue
			}
			if oldText != "" && p.reject != nil && p.reject(oldText) && !(lang == "zh" && heldVerbatim(req.Related, oldText)) {
				continue
			}
			if op, ok := correction(req, m, s, oldText, newText, p); ok {
				return op, true
			}
			corrected = true
			continue
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
		op := newAdd(m, s, p.typ, p.importance, "rules: "+p.name)
		if p.payload == 0 {
			op.Title = makeTitle("", s, p.lang)
		} else {
			op.Title = makeTitle(p.titlePrefix, rest, p.lang)
		}
		if p.classify {
			op.Type = classify(rest)
		}
		return op, true
	}
	if corrected {
		// "数据库不是MySQL而是PostgreSQL" with no entry to correct: the
		// user corrects a memory we do not hold; nothing is learnt.
		return Op{}, false
	}
	if task {
		return Op{}, false
	}
	return implicitAdd(m, s, lang)
}

// newAdd is an add of statement s of message m.
func newAdd(m Message, s, typ string, importance int, reason string) Op {
	return Op{
		Op: payload.OpAdd, Type: typ, Content: s,
		EvidenceEventIDs: []string{m.EventID},
		Importance:       nonZero(importance), Confidence: new(0.9),
		Reason:     reason,
		Provenance: payload.ProvenanceDistiller,
	}
}

// correction turns a correction statement into a supersede of the entry it
// corrects, a conflict when that entry is unclear or the user is not sure
// (hedged), an add (fallbackAdd) or nothing.
func correction(req Request, m Message, s, oldText, newText string, p pattern) (Op, bool) {
	op := Op{
		Type: p.typ, Title: makeTitle("", s, p.lang), Content: s,
		NewQuote: s, EvidenceEventIDs: []string{m.EventID},
		Importance: nonZero(p.importance), Provenance: payload.ProvenanceDistiller,
	}
	targets, quotes, verbatim := findCorrected(req, m, s, oldText, newText, p)
	unsure := hedged(s)
	switch {
	case len(targets) == 1 && verbatim && !unsure:
		op.Op, op.TargetID, op.OldQuote = payload.OpSupersede, targets[0].ID, quotes[0]
		op.Confidence = new(0.9)
		op.Reason = "rules: " + p.name
	case len(targets) >= 1:
		// Unclear: several entries fit, the one that fits does not hold
		// the old words verbatim, or the user is not sure. Both stay, as
		// a conflict.
		op.Op, op.TargetID = payload.OpConflict, targets[0].ID
		if verbatim {
			op.OldQuote = quotes[0]
		}
		op.Confidence = new(0.5)
		op.Reason = "rules: " + p.name + ": unclear which entry is corrected"
		if unsure {
			op.Reason = "rules: " + p.name + ": the user is not sure"
		}
	case p.fallbackAdd && !unsure:
		op.Op, op.NewQuote = payload.OpAdd, ""
		op.Confidence = new(0.8)
		op.Reason = "rules: " + p.name + ": no related entry to correct"
		return op, true
	default:
		return Op{}, false
	}
	if targets[0].Type != "" {
		op.Type = targets[0].Type
	}
	return op, true
}

// forgetOp forgets the one active related entry the statement is about:
// the entry sharing the most content terms with it, when no other shares
// as many.
func forgetOp(req Request, m Message, s string, p pattern) (Op, bool) {
	e, ok := uniqueBest(req.Related, contentTerms(s, forgetWords), nil)
	if !ok {
		return Op{}, false
	}
	return Op{
		Op: payload.OpForget, TargetID: e.ID, EvidenceEventIDs: []string{m.EventID},
		Reason: "rules: " + p.name, Provenance: payload.ProvenanceDistiller,
	}, true
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
