package checkpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/observer/distill"
	"dshmem/projector"
	"dshmem/sqlstore"
)

// The evidence pass (issue 16): beside the distiller's answer, each
// checkpoint derives ops from what happened in the claimed range, with
// rules that read only the log (through the index) up to the range's
// end, so the answer is the same whenever it is computed and replay
// applies the ops without recomputing them. Three kinds:
//
// Confidence (op "confidence", active or in-conflict entries of the
// session's own stream and global ones; an op changes only entries of its
// own stream, so the ops for global entries of a workspace session go in
// a memory/ops event of the global stream, globalOps, beside the
// checkpoint's: see checkpointRange):
//
//	tool-success  +0.05  the first tool/result that says ok after a
//	tool-failure  −0.20  memory/shown named the entry (one verdict per
//	                     showing; a result without ok is no verdict)
//	confirmation  +0.10  the user's next reply after the answer that
//	correction    −0.30  followed the showing opens with "yes, that's
//	                     right", "对，没错" … or "no, that's wrong",
//	                     "不对" … (distill.Feedback); at most one other
//	                     user message between the showing and it
//	reuse         +0.05  the session's first showing of an entry that
//	                     a memory/shown of another session of the stream
//	                     named before (for a global entry: of any stream,
//	                     at an earlier event time if it is another one)
//
// Aliases (op "alias"): distill.Aliases over each message the user typed
// in the range; the distiller's add ops resting only on messages that say
// nothing but an alias (its quote is at least 4/5 of the message) are
// dropped: an alias is lexical memory, never a preference entry.
//
// Procedures (op "procedure", workspace streams only; procedure.go).
//
// A step of the pass is evaluated when its deciding event (the tool
// result, the reply, the showing, the message, the run's end) lies in
// the claimed range; the session's earlier events are read for context.
// Claimed ranges are contiguous, so each decision is made by exactly one
// checkpoint.

// Confidence changes of the evidence pass.
const (
	DeltaToolSuccess  = 0.05
	DeltaToolFailure  = -0.20
	DeltaConfirmation = 0.10
	DeltaCorrection   = -0.30
	DeltaReuse        = 0.05
)

// showing is the latest memory/shown event of the session being scanned.
type showing struct {
	eventID   string
	entries   []string
	judged    bool // a tool result has given its verdict
	assistant bool // an assistant answer followed it
	users     int  // user messages since it
}

// evidencePass is the state of one pass over a session's events.
type evidencePass struct {
	from, to uint64
	stream   string
	session  string
	cwd      string
	conf     map[string]float64 // entries that may move → confidence
	global   map[string]bool    // those of conf that are global entries of a workspace session
	ops      []payload.Op
	// globalOps are the confidence ops for global entries, their evidence
	// ids qualified with the session's stream (evidenceRef).
	globalOps []payload.Op
	aliasEv   map[string]bool // user messages that taught an alias
	reuse     []reuseCheck
	seen      map[string]bool // entries shown in the session so far
	shown     *showing
	runs      runTracker
}

type reuseCheck struct {
	eventID string
	seq     uint64
	time    string
	entries []string
}

// evidence runs the pass over the claimed range of req.
func (e engine) evidence(ctx context.Context, p Pending, req distill.Request) (*evidencePass, error) {
	ps := &evidencePass{from: req.From, to: req.To, stream: req.Stream, session: req.Session, cwd: p.Cwd,
		conf: map[string]float64{}, global: map[string]bool{}, aliasEv: map[string]bool{}, seen: map[string]bool{}}
	if req.Session == "" || req.From > req.To {
		return ps, nil
	}
	ents, err := e.Entries(ctx, observer.EntryFilter{Scopes: []string{req.Stream, observer.GlobalStream},
		Statuses: []string{payload.StatusActive, payload.StatusConflict}})
	if err != nil {
		return nil, err
	}
	for _, en := range ents {
		ps.conf[en.ID] = en.Confidence
		if en.Scope != req.Stream {
			ps.global[en.ID] = true
		}
	}
	ps.runs.on = projector.IsWorkspace(req.Stream)
	err = e.Store().ScanSessionEvents(ctx, req.Stream, req.Session, 1, req.To, func(ev sqlstore.Event) error {
		ps.event(ev)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := e.reuse(ctx, ps); err != nil {
		return nil, err
	}
	if err := e.procedures(ctx, ps); err != nil {
		return nil, err
	}
	return ps, nil
}

func (ps *evidencePass) inRange(seq uint64) bool { return seq >= ps.from && seq <= ps.to }

// event folds one event of the session into the pass.
func (ps *evidencePass) event(ev sqlstore.Event) {
	switch ev.Type {
	case events.TypeMemoryShown:
		var d payload.Shown
		if payload.Unmarshal(ev.Data, &d) != nil || (d.Session != "" && d.Session != ps.session) {
			return
		}
		ids := appendUnique(nil, d.Entries...)
		var first []string
		for _, id := range ids {
			if !ps.seen[id] {
				ps.seen[id] = true
				first = append(first, id)
			}
		}
		if ps.inRange(ev.Seq) && len(first) > 0 {
			ps.reuse = append(ps.reuse, reuseCheck{ev.ID, ev.Seq, ev.Time, first})
		}
		ps.shown = &showing{eventID: ev.ID, entries: ids}
	case events.TypeAssistantMessage:
		var d payload.AssistantMessage
		if payload.Unmarshal(ev.Data, &d) == nil && !d.Injected && ps.shown != nil {
			ps.shown.assistant = true
		}
	case events.TypeToolCall:
		var d payload.ToolCall
		if payload.Unmarshal(ev.Data, &d) == nil {
			ps.runs.call(d)
		}
	case events.TypeToolResult:
		var d payload.ToolResult
		if payload.Unmarshal(ev.Data, &d) != nil || d.Injected {
			return
		}
		ps.runs.result(ev, d)
		if d.OK == nil || ps.shown == nil || ps.shown.judged {
			return
		}
		ps.shown.judged = true
		if !ps.inRange(ev.Seq) {
			return
		}
		if *d.OK {
			ps.move(ps.shown, ev.ID, DeltaToolSuccess, fmt.Sprintf("tool-success: %s succeeded after the entry was shown", d.Name))
		} else {
			ps.move(ps.shown, ev.ID, DeltaToolFailure, fmt.Sprintf("tool-failure: %s failed after the entry was shown", d.Name))
		}
	case events.TypeUserMessage:
		var d payload.UserMessage
		if payload.Unmarshal(ev.Data, &d) != nil || d.Injected {
			return
		}
		fb := distill.Feedback(d.Text)
		ps.runs.close(ev, d.Text, fb, ps.inRange(ev.Seq))
		if s := ps.shown; s != nil {
			if s.assistant && s.users <= 1 && fb != distill.FeedbackNone && ps.inRange(ev.Seq) {
				if fb == distill.FeedbackConfirm {
					ps.move(s, ev.ID, DeltaConfirmation, fmt.Sprintf("confirmation: the user replied %q", distill.TruncateRunes(d.Text, 60)))
				} else {
					ps.move(s, ev.ID, DeltaCorrection, fmt.Sprintf("correction: the user replied %q", distill.TruncateRunes(d.Text, 60)))
				}
			}
			if fb != distill.FeedbackNone {
				ps.shown = nil // one reply is its verdict
			} else {
				s.users++
			}
		}
		if ps.inRange(ev.Seq) {
			for _, a := range distill.Aliases(d.Text) {
				if 5*utf8.RuneCountInString(a.Quote) >= 4*utf8.RuneCountInString(strings.TrimSpace(d.Text)) {
					ps.aliasEv[ev.ID] = true // the message is the alias and nothing more
				}
				ps.ops = append(ps.ops, payload.Op{Op: payload.OpAlias, Alias: a.Alias, Expansion: a.Expansion,
					NewQuote: a.Quote, EvidenceEventIDs: []string{ev.ID}, Provenance: payload.ProvenanceEvidence,
					Reason: fmt.Sprintf("alias: the user calls %s %q", a.Expansion, a.Alias)})
			}
		}
	case events.TypeTaskEnd, events.TypeSessionEnd:
		ps.runs.close(ev, "", distill.FeedbackNone, ps.inRange(ev.Seq))
	}
}

// move appends a confidence op of delta for each entry of s that may
// move (the stream's own or a global one) and would change.
func (ps *evidencePass) move(s *showing, evidenceID string, delta float64, reason string) {
	for _, id := range s.entries {
		ps.moveEntry(id, delta, reason, s.eventID, evidenceID)
	}
}

func (ps *evidencePass) moveEntry(id string, delta float64, reason string, evidence ...string) {
	c, ok := ps.conf[id]
	if !ok {
		return
	}
	next := payload.ClampConfidence(c + delta)
	if next == c {
		return
	}
	ps.conf[id] = next
	op := payload.Op{Op: payload.OpConfidence, TargetID: id, Delta: new(delta),
		EvidenceEventIDs: evidence, Reason: reason, Provenance: payload.ProvenanceEvidence}
	if !ps.global[id] {
		ps.ops = append(ps.ops, op)
		return
	}
	op.EvidenceEventIDs = make([]string, len(evidence))
	for i, ev := range evidence {
		op.EvidenceEventIDs[i] = evidenceRef(ps.stream, ev)
	}
	op.Reason = fmt.Sprintf("%s (session %s of %s)", reason, ps.session, ps.stream)
	ps.globalOps = append(ps.globalOps, op)
}

// evidenceRef names an event of another stream in an op: the stream, "/"
// and the event's id. Event ids are unique only within their stream, and
// a stream name holds no "/", so the first "/" splits the two. Part of
// the on-disk format; do not change.
func evidenceRef(stream, id string) string { return stream + "/" + id }

// reuse raises the entries whose first showing in this session follows a
// showing in another session: of the stream for its own entries, of any
// stream for a global entry (shown in sessions of every workspace; in
// another stream "before" is an earlier event time, seqs being per
// stream). The pass reads the index as it is when the checkpoint runs, so
// a showing of another stream not yet indexed then is not counted; the
// op records the answer, so replay agrees either way.
func (e engine) reuse(ctx context.Context, ps *evidencePass) error {
	for _, r := range ps.reuse {
		var own, global []string
		for _, id := range r.entries {
			if _, ok := ps.conf[id]; !ok {
				continue
			}
			if ps.global[id] || ps.stream == observer.GlobalStream {
				global = append(global, id)
			} else {
				own = append(own, id)
			}
		}
		before, err := e.Store().ShownElsewhereBefore(ctx, ps.stream, ps.session, r.seq, own)
		if err != nil {
			return err
		}
		gb, err := e.Store().ShownElsewhereBeforeAnyStream(ctx, ps.stream, ps.session, r.seq, r.time, global)
		if err != nil {
			return err
		}
		for _, id := range r.entries {
			if before[id] || gb[id] {
				ps.moveEntry(id, DeltaReuse, "reuse: shown again in another session", r.eventID)
			}
		}
	}
	return nil
}

// dropAliasAdds moves the distiller's add ops that rest only on messages
// which taught an alias to rejected: such a message is lexical memory,
// not a fact or a preference.
func dropAliasAdds(ops []distill.Op, rejected []distill.Rejected, aliasEv map[string]bool) ([]distill.Op, []distill.Rejected) {
	if len(aliasEv) == 0 {
		return ops, rejected
	}
	out := ops[:0]
	for _, o := range ops {
		only := o.Op == payload.OpAdd && len(o.EvidenceEventIDs) > 0
		for _, id := range o.EvidenceEventIDs {
			only = only && aliasEv[id]
		}
		if only {
			rejected = append(rejected, distill.Rejected{Op: o, Why: "the message teaches an alias: learned as an alias op that expands recall, not as an entry"})
			continue
		}
		out = append(out, o)
	}
	return out, rejected
}

func appendUnique(list []string, add ...string) []string {
	for _, s := range add {
		if s == "" {
			continue
		}
		dup := false
		for _, x := range list {
			dup = dup || x == s
		}
		if !dup {
			list = append(list, s)
		}
	}
	return list
}

// stepText is a tool call as a procedure step: its name and its main
// argument (a command, a path, a query), first line only, spaces
// collapsed, at most 100 runes.
func stepText(d payload.ToolCall) string {
	var args map[string]any
	_ = json.Unmarshal(d.Args, &args)
	step := strings.TrimSpace(d.Name)
	for _, k := range []string{"command", "cmd", "script", "path", "file_path", "file", "query", "pattern", "url"} {
		if s, ok := args[k].(string); ok && strings.TrimSpace(s) != "" {
			line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
			step += " " + strings.Join(strings.Fields(line), " ")
			break
		}
	}
	return distill.TruncateRunes(step, 100)
}
