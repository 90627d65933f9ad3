package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"dshmem/events/payload"
	"dshmem/observer/distill"
	"dshmem/sqlstore"
)

// Procedures (issue 16): a run is the tool calls of one turn, from the
// user message that opened it to the next user message (or task/end,
// session/end) that closes it; its steps are the calls (stepText), a
// call repeated at once counted once (a retry). A run of 2 to
// maxRunSteps steps is judged when it closes in the claimed range:
//
//	success  its last tool result says ok, and the closing message is
//	         no correction (a confirmation marks it confirmed)
//	failure  its last tool result says not ok, or the closing message
//	         is a correction
//	(else)   no verdict: a result without ok
//
// Runs with the same steps in one workspace stream are one procedure,
// id "p-" + 16 hex digits of sha256(stream, steps). Its stage, after
// each judged run, by the independent sessions (distinct session ids)
// where it succeeded:
//
//	P0 observed    one session
//	P1 candidate   two sessions
//	P2 validated   three or more, each with its check (the last step's
//	               result said ok)
//	P3 active      P2 and confirmed by the user after a successful run,
//	               or ActiveAfter sessions of validations
//	P4 deprecated  its check failed twice, or once while P3, or the user
//	               corrected a run; or another procedure with the same
//	               trigger became P3 (a conflict). P4 is final.
//
// Every change of state (a stage, a new session, a failure, a
// confirmation) is one op carrying the procedure's whole state and the
// run's event ids as evidence. Procedures are learned in workspace
// streams only and stay there: nothing makes a project's procedure a
// global one. Only P3 procedures reach packets (observer/broker).

// Bounds and thresholds of procedures.
const (
	maxRunSteps  = 12
	ActiveAfter  = 5 // independent successful sessions that make a P2 procedure P3 without a confirmation
	failuresToP4 = 2
)

// run is one turn's tool calls.
type run struct {
	trigger, triggerID string
	steps              []string
	lastOK             *bool
	lastResultID       string
}

// judgedRun is a run closed in the claimed range with a verdict.
type judgedRun struct {
	run
	ok, confirmed bool
	closerID      string
}

type runTracker struct {
	on     bool
	cur    *run
	judged []judgedRun
}

func (t *runTracker) call(d payload.ToolCall) {
	if !t.on || t.cur == nil {
		return
	}
	s := stepText(d)
	if n := len(t.cur.steps); n > 0 && t.cur.steps[n-1] == s {
		return // a retry
	}
	t.cur.steps = append(t.cur.steps, s)
}

func (t *runTracker) result(ev sqlstore.Event, d payload.ToolResult) {
	if !t.on || t.cur == nil {
		return
	}
	t.cur.lastOK, t.cur.lastResultID = d.OK, ev.ID
}

// close ends the current run at ev (judging it when judge is set) and,
// for a user message (text non-empty), opens the next one.
func (t *runTracker) close(ev sqlstore.Event, text, fb string, judge bool) {
	if !t.on {
		return
	}
	if r := t.cur; r != nil && judge && len(r.steps) >= 2 && len(r.steps) <= maxRunSteps && r.lastOK != nil {
		j := judgedRun{run: *r, ok: *r.lastOK && fb != distill.FeedbackCorrection, confirmed: fb == distill.FeedbackConfirm}
		if fb == distill.FeedbackCorrection || (fb == distill.FeedbackConfirm && *r.lastOK) {
			j.closerID = ev.ID
		}
		t.judged = append(t.judged, j)
	}
	t.cur = nil
	if text != "" {
		line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
		t.cur = &run{trigger: distill.TruncateRunes(strings.TrimSpace(line), 120), triggerID: ev.ID}
	}
}

// ProcedureID derives the id of the procedure of steps in stream. Part of
// the on-disk format (ids appear in later ops); do not change.
func ProcedureID(stream string, steps []string) string {
	sum := sha256.Sum256([]byte(stream + "\x00" + strings.Join(steps, "\x00")))
	return "p-" + hex.EncodeToString(sum[:8])
}

// procedures turns the judged runs of the pass into procedure ops.
func (e engine) procedures(ctx context.Context, ps *evidencePass) error {
	if len(ps.runs.judged) == 0 {
		return nil
	}
	state := map[string]*payload.Procedure{}
	load := func(id string) (*payload.Procedure, error) {
		if p, ok := state[id]; ok {
			return p, nil
		}
		row, ok, err := e.Store().Procedure(ctx, id)
		if err != nil || !ok || row.Scope != ps.stream {
			return nil, err
		}
		var p payload.Procedure
		if err := json.Unmarshal([]byte(row.State), &p); err != nil {
			return nil, nil // unreadable state: learnt again from the start
		}
		state[id] = &p
		return &p, nil
	}
	for _, r := range ps.runs.judged {
		id := ProcedureID(ps.stream, r.steps)
		p, err := load(id)
		if err != nil {
			return err
		}
		evidence := appendUnique(nil, r.triggerID, r.lastResultID, r.closerID)
		if p == nil {
			if !r.ok {
				continue // a failure of something never seen to work is no procedure
			}
			p = &payload.Procedure{ID: id, Stage: payload.StageObserved, Trigger: r.trigger,
				Steps: slices.Clone(r.steps), Check: fmt.Sprintf("the last step (%s) reports success", r.steps[len(r.steps)-1])}
			if ps.cwd != "" {
				p.Preconditions = []string{"in workspace " + ps.cwd}
			}
			state[id] = p
		} else if p.Stage == payload.StageDeprecated {
			continue
		} else {
			c := *p
			c.Sessions = slices.Clone(p.Sessions)
			p = &c
			state[id] = p
		}
		before := p.Stage
		var why string
		if r.ok {
			newSession := !slices.Contains(p.Sessions, ps.session)
			newConfirm := r.confirmed && !p.Confirmed
			if newSession {
				p.Sessions = append(p.Sessions, ps.session)
			}
			p.Confirmed = p.Confirmed || r.confirmed
			p.Stage = stageOf(p)
			why = fmt.Sprintf("succeeded in session %s (%d independent sessions)", ps.session, len(p.Sessions))
			if newConfirm {
				why += "; the user confirmed it"
			}
			if !newSession && !newConfirm {
				continue
			}
		} else {
			p.Failures++
			if p.Failures >= failuresToP4 || before == payload.StageActive || r.closerID != "" {
				p.Stage = payload.StageDeprecated
			}
			why = fmt.Sprintf("its check failed in session %s (%d failures)", ps.session, p.Failures)
			if r.closerID != "" {
				why = fmt.Sprintf("the user corrected a run in session %s", ps.session)
			}
		}
		ps.ops = append(ps.ops, procedureOp(p, before, why, evidence))
		if p.Stage == payload.StageActive && before != payload.StageActive {
			if err := e.conflicts(ctx, ps, p, state, evidence); err != nil {
				return err
			}
		}
	}
	return nil
}

// stageOf is the stage of a procedure that is not deprecated.
func stageOf(p *payload.Procedure) string {
	n := len(p.Sessions)
	switch {
	case n >= ActiveAfter || (n >= 3 && p.Confirmed):
		return payload.StageActive
	case n >= 3:
		return payload.StageValidated
	case n == 2:
		return payload.StageCandidate
	}
	return payload.StageObserved
}

func procedureOp(p *payload.Procedure, before, why string, evidence []string) payload.Op {
	snap := *p
	snap.Sessions = slices.Clone(p.Sessions)
	snap.Steps = slices.Clone(p.Steps)
	reason := fmt.Sprintf("%s → %s: %s", before, p.Stage, why)
	if before == p.Stage {
		reason = fmt.Sprintf("%s: %s", p.Stage, why)
	}
	return payload.Op{Op: payload.OpProcedure, TargetID: p.ID, Procedure: &snap, EvidenceEventIDs: evidence,
		Reason: reason, Provenance: payload.ProvenanceEvidence}
}

// conflicts deprecates the other active procedures of the stream with the
// same trigger as p, which just became active: two checklists for one
// task contradict each other, and the newer evidence wins.
func (e engine) conflicts(ctx context.Context, ps *evidencePass, p *payload.Procedure, state map[string]*payload.Procedure, evidence []string) error {
	rows, err := e.Store().Procedures(ctx, ps.stream, payload.StageActive)
	if err != nil {
		return err
	}
	key := sqlstore.AliasKey(p.Trigger)
	for _, row := range rows {
		if row.ID == p.ID || sqlstore.AliasKey(row.Trigger) != key {
			continue
		}
		o, ok := state[row.ID]
		if !ok {
			var q payload.Procedure
			if json.Unmarshal([]byte(row.State), &q) != nil {
				continue
			}
			o = &q
			state[row.ID] = o
		}
		if o.Stage != payload.StageActive {
			continue
		}
		o.Stage = payload.StageDeprecated
		ps.ops = append(ps.ops, procedureOp(o, payload.StageActive, "conflicts with "+p.ID+", which became active for the same trigger", evidence))
	}
	return nil
}
