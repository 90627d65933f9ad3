package distill

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"dshmem/events/payload"
	"dshmem/sqlstore/tokenize"
)

// Rejected is an op Validate refused, with why. An op refused for
// credential-shaped content has its text fields replaced by
// "[refused: <kind>]", so logging a Rejected never writes the secret.
type Rejected struct {
	Op  Op
	Why string
}

// Validate checks a distiller's answer against the request before
// anything is written and returns the ops to write, in answer order, and
// the ops it refused. It is deterministic: the same request and answer
// give the same ops. The rules, in the order they apply to each op, are
// in the package documentation (# Validation).
func Validate(req Request, res Result) (ops []Op, rejected []Rejected) {
	v := validator{req: req, byID: make(map[string]Entry, len(req.Related)), groups: make(map[string]bool)}
	for _, e := range req.Related {
		if _, dup := v.byID[e.ID]; !dup && e.ID != "" {
			v.byID[e.ID] = e
		}
		if e.ConflictGroup != "" {
			v.groups[e.ConflictGroup] = true
		}
	}
	v.events = make(map[string]Message, len(req.Messages))
	for _, m := range req.Messages {
		if req.inRange(m) && m.EventID != "" {
			v.events[m.EventID] = m
		}
	}
	for _, o := range res.Operations {
		out, why := v.check(o)
		if why != "" {
			rejected = append(rejected, Rejected{Op: out, Why: why})
			continue
		}
		ops = append(ops, out)
	}
	return ops, rejected
}

type validator struct {
	req    Request
	byID   map[string]Entry
	groups map[string]bool
	events map[string]Message // in-range messages by event id
}

// check returns the op to write, or a reason to refuse it (with the op as
// refused).
func (v *validator) check(o Op) (Op, string) {
	o.Op = strings.ToLower(strings.TrimSpace(o.Op))
	if !payload.KnownOp(o.Op) {
		return o, fmt.Sprintf("unknown op %q: want add, revise, supersede, conflict or forget", o.Op)
	}
	if kind, field := opCredential(o); kind != "" {
		return refusedCopy(o, kind), fmt.Sprintf("credential-shaped content (%s) in %s", kind, field)
	}
	if o.Provenance == "" {
		o.Provenance = payload.ProvenanceDistiller
	}
	normalizeFields(&o)

	// Evidence: keep only ids of the claimed range; an op the distiller
	// made must rest on something a person typed.
	var ev []string
	userEvidence := false
	for _, id := range o.EvidenceEventIDs {
		m, ok := v.events[id]
		if !ok || slices.Contains(ev, id) {
			continue
		}
		ev = append(ev, id)
		userEvidence = userEvidence || m.userTyped()
	}
	if len(o.EvidenceEventIDs) == 0 && o.Provenance == payload.ProvenanceDistiller {
		// The legacy shapes carry no evidence: infer it.
		if id := v.inferEvidence(o); id != "" {
			ev, userEvidence = []string{id}, true
			o.Reason = joinReason(o.Reason, "evidence inferred from shared terms")
		}
	}
	o.EvidenceEventIDs = ev
	if o.Provenance == payload.ProvenanceDistiller && !userEvidence {
		return o, "no evidence from a message the user typed in the claimed range (assistant, tool and injected text are never learnt)"
	}

	// Target.
	var target Entry
	if o.Op == payload.OpAdd {
		o.TargetID = ""
	} else {
		if o.TargetID == "" {
			return o, fmt.Sprintf("%s without targetId", o.Op)
		}
		e, ok := v.byID[o.TargetID]
		if !ok {
			if v.groups[o.TargetID] {
				return o, fmt.Sprintf("targetId %q is a conflict group: aim at one member, an op never changes the other members", o.TargetID)
			}
			return o, fmt.Sprintf("targetId %q is not one of the related entries", o.TargetID)
		}
		if e.Status == payload.StatusSuperseded || e.Status == payload.StatusForgotten {
			return o, fmt.Sprintf("target %q is %s", e.ID, e.Status)
		}
		target = e
	}

	switch o.Op {
	case payload.OpAdd:
		if o.Title == "" && o.Content == "" {
			return o, "add without title or content"
		}
		if o.Type == "" {
			o.Type = payload.TypeFact
		}
		if e, d, ok := v.nearDuplicate(o); ok {
			o.Op = payload.OpRevise
			o.TargetID = e.ID
			o.Reason = joinReason(o.Reason, fmt.Sprintf("near-duplicate of %s (Dice %.2f): add turned into revise", e.ID, d))
			fillFromTarget(&o, e)
		}
	case payload.OpRevise:
		if o.Title == "" && value(o.Description) == "" && o.Content == "" {
			return o, "revise without title, description or content"
		}
		fillFromTarget(&o, target)
	case payload.OpSupersede:
		if why := v.quotesHold(o, target); why != "" {
			o.Op = payload.OpConflict
			o.Reason = joinReason(o.Reason, "supersede not verified: "+why+"; kept as a conflict")
		}
		if o.Title == "" && o.Content == "" {
			o.Content = o.NewQuote
		}
		if o.Title == "" && o.Content == "" {
			// Not even as a conflict: there is nothing new to hold.
			return o, "supersede without newQuote, title or content"
		}
		if o.Type == "" {
			o.Type = target.Type
		}
	case payload.OpConflict:
		if o.Title == "" && o.Content == "" {
			return o, "conflict without the new title or content"
		}
		if o.Type == "" {
			o.Type = target.Type
		}
	}
	if o.Op != payload.OpForget && o.Title == "" {
		o.Title = TruncateRunes(firstLine(o.Content), MaxTitleRunes)
	}
	return o, ""
}

// inferEvidence finds the message an op without evidence rests on: the
// in-range message sharing the most terms with the op's text, if the user
// typed it (a tie goes to the user) and it shares at least two terms (or
// every term of a one-term op). An op closest to injected, assistant or
// tool text gets none, and is rejected.
func (v *validator) inferEvidence(o Op) string {
	terms := tokenize.Terms(opText(o) + "\n" + o.NewQuote)
	if len(terms) == 0 {
		return ""
	}
	best, bestUser, bestUserID := 0, 0, ""
	for _, m := range v.req.Messages {
		if !v.req.inRange(m) || m.EventID == "" {
			continue
		}
		n := overlap(terms, tokenize.Terms(m.Text))
		if m.userTyped() && n > bestUser {
			bestUser, bestUserID = n, m.EventID
		}
		if !m.userTyped() && n > best {
			best = n
		}
	}
	if bestUser < best || bestUser < min(2, len(terms)) {
		return ""
	}
	return bestUserID
}

// nearDuplicate finds the active related entry of the request's scope
// closest to an add, if it is at least DuplicateDiceMin close. Only active
// entries count: an add is never redirected onto a conflict group member.
func (v *validator) nearDuplicate(o Op) (Entry, float64, bool) {
	text := opText(o)
	var best Entry
	bestD := 0.0
	for _, e := range v.req.Related {
		if !e.active() || e.Scope != v.req.Stream {
			continue
		}
		if d := Dice(text, entryText(e)); d > bestD {
			best, bestD = e, d
		}
	}
	return best, bestD, bestD >= DuplicateDiceMin
}

// quotesHold checks a supersede's quotes: newQuote must be verbatim text
// of a message the user typed in the claimed range, oldQuote verbatim text
// of the target itself (not of another member of its conflict group).
func (v *validator) quotesHold(o Op, target Entry) string {
	if strings.TrimSpace(o.NewQuote) == "" {
		return "no newQuote"
	}
	found := false
	for _, m := range v.req.Messages {
		if m.userTyped() && v.req.inRange(m) && strings.Contains(m.Text, o.NewQuote) {
			found = true
			break
		}
	}
	if !found {
		return "newQuote is not verbatim text of a user message in the claimed range"
	}
	if strings.TrimSpace(o.OldQuote) == "" {
		return "no oldQuote"
	}
	if !strings.Contains(target.Title, o.OldQuote) && !strings.Contains(target.Description, o.OldQuote) &&
		!strings.Contains(target.Content, o.OldQuote) {
		return fmt.Sprintf("oldQuote is not verbatim text of %s", target.ID)
	}
	return ""
}

// normalizeFields applies the field caps: text is trimmed and cut at a
// rune boundary (title 160, description 500, content 4000 runes), tags
// and terms lose blanks and repeats and keep the first 8 and 16,
// importance is clamped to 0–3 and confidence to 0–1, a type is lower
// case and a plural is made singular; an unknown type becomes "fact".
func normalizeFields(o *Op) {
	o.Title = TruncateRunes(strings.Join(strings.Fields(o.Title), " "), MaxTitleRunes)
	o.Description = optional(TruncateRunes(strings.TrimSpace(value(o.Description)), MaxDescRunes))
	o.Content = TruncateRunes(strings.TrimSpace(o.Content), MaxContentRunes)
	o.Tags = capList(o.Tags, MaxTags)
	o.Terms = capList(o.Terms, MaxTerms)
	o.Importance = nonZero(max(payload.MinImportance, min(payload.MaxImportance, value(o.Importance))))
	c := value(o.Confidence)
	if math.IsNaN(c) {
		c = 0
	}
	o.Confidence = nonZero(math.Max(0, math.Min(1, c)))
	if o.Type != "" {
		o.Type = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(o.Type)), "s")
		if !payload.KnownEntryType(o.Type) {
			o.Type = payload.DefaultEntryType
		}
	}
}

func capList(in []string, n int) []string {
	var out []string
	for _, s := range in {
		s = TruncateRunes(strings.TrimSpace(s), 64)
		if s == "" || slices.Contains(out, s) {
			continue
		}
		out = append(out, s)
		if len(out) == n {
			break
		}
	}
	return out
}

// fillFromTarget gives the fields a revise leaves empty the target's
// values, so the new version is complete; the projector keeps the
// previous version in the entry's revisions.
func fillFromTarget(o *Op, e Entry) {
	if o.Type == "" {
		o.Type = e.Type
	}
	if o.Title == "" {
		o.Title = e.Title
	}
	if value(o.Description) == "" {
		o.Description = optional(e.Description)
	}
	if o.Content == "" {
		o.Content = e.Content
	}
	if len(o.Tags) == 0 {
		o.Tags = capList(e.Tags, MaxTags)
	}
	if len(o.Terms) == 0 {
		o.Terms = capList(e.Terms, MaxTerms)
	}
	if o.Importance == nil {
		o.Importance = nonZero(max(payload.MinImportance, min(payload.MaxImportance, e.Importance)))
	}
}

// opCredential reports the first credential-shaped field of o.
func opCredential(o Op) (kind, field string) {
	fields := []struct{ name, text string }{
		{"title", o.Title}, {"description", value(o.Description)}, {"content", o.Content},
		{"newQuote", o.NewQuote}, {"oldQuote", o.OldQuote}, {"reason", o.Reason},
		{"tags", strings.Join(o.Tags, " ")}, {"terms", strings.Join(o.Terms, " ")},
	}
	for _, f := range fields {
		if k := credentialIn(f.text); k != "" {
			return k, f.name
		}
	}
	return "", ""
}

func refusedCopy(o Op, kind string) Op {
	mark := "[refused: " + kind + "]"
	blank := func(s string) string {
		if s == "" {
			return ""
		}
		return mark
	}
	o.Title, o.Description, o.Content = blank(o.Title), optional(blank(value(o.Description))), blank(o.Content)
	o.NewQuote, o.OldQuote, o.Reason = blank(o.NewQuote), blank(o.OldQuote), blank(o.Reason)
	o.Tags, o.Terms = nil, nil
	return o
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
