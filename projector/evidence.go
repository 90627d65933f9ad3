package projector

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/sqlstore"
)

// The evidence ops of a memory/ops event (payload.EvidenceOpKinds, issue
// 16), written by a checkpoint's evidence pass
// (observer/checkpoint/evidence.go) beside the distiller's ops. Each
// carries what it changes, so the fold only applies it:
//
//	confidence  the target entry (of the event's own stream, neither
//	            forgotten nor superseded; a global entry's ops come in
//	            a memory/ops event of the global stream, their evidence
//	            ids "ws-…/<id>" naming the workspace's events) takes
//	            confidence + delta,
//	            clamped to 0–1, rounded to 3 decimals, in a new version
//	            (op "confidence", the reason naming the evidence); a
//	            delta that changes nothing writes nothing.
//	alias       an aliases row of the event's stream: alias, expansion,
//	            the user's quoted words (newQuote) and the evidence ids;
//	            the first op that teaches a pair stays. Blank, equal, or
//	            over maxAliasRunes parts write nothing.
//	procedure   the procedure's state (payload.Procedure) replaces the
//	            row of its id, in the event's stream, and a
//	            procedure_versions row records the stage, the reason and
//	            the evidence. A procedure of another stream, an unknown
//	            stage, or no steps writes nothing: a procedure never
//	            leaves the scope it was learned in.
//
// Like every op, a bad one is skipped and never fails the fold.

// maxAliasRunes bounds each side of an alias.
const maxAliasRunes = 64

func (f *fold) evidenceOp(ev *events.Envelope, name string, o *payload.Op) error {
	switch name {
	case payload.OpConfidence:
		return f.confidenceOp(ev, o)
	case payload.OpAlias:
		return f.aliasOp(ev, o)
	case payload.OpProcedure:
		return f.procedureOp(ev, o)
	}
	return nil
}

func (f *fold) confidenceOp(ev *events.Envelope, o *payload.Op) error {
	if o.Delta == nil || math.IsNaN(*o.Delta) || math.IsInf(*o.Delta, 0) {
		return nil
	}
	t, err := f.loadEntry(o.TargetID, ev.Stream)
	if err != nil || t == nil || t.status == statusForgotten || t.status == statusSuperseded {
		return err
	}
	c := math.Round(payload.ClampConfidence(t.confidence+*o.Delta)*1000) / 1000
	if c == t.confidence {
		return nil
	}
	t.confidence = c
	reason := o.Reason
	if len(o.EvidenceEventIDs) > 0 {
		reason = joinReasons(reason, "evidence "+strings.Join(o.EvidenceEventIDs, ", "))
	}
	return f.updateEntry(ev, t, payload.OpConfidence, reason, false)
}

func (f *fold) aliasOp(ev *events.Envelope, o *payload.Op) error {
	a, x := strings.TrimSpace(o.Alias), strings.TrimSpace(o.Expansion)
	if a == "" || x == "" || sqlstore.AliasKey(a) == sqlstore.AliasKey(x) ||
		utf8.RuneCountInString(a) > maxAliasRunes || utf8.RuneCountInString(x) > maxAliasRunes {
		return nil
	}
	return f.tx.InsertAlias(&sqlstore.AliasRow{Scope: ev.Stream, Alias: a, Expansion: x, Quote: o.NewQuote,
		EventID: ev.ID, Evidence: o.EvidenceEventIDs, Seq: ev.Seq, Time: ev.Time})
}

func (f *fold) procedureOp(ev *events.Envelope, o *payload.Op) error {
	p := o.Procedure
	if p == nil || p.ID == "" || !payload.KnownStage(p.Stage) || len(p.Steps) == 0 {
		return nil
	}
	row, ok, err := f.tx.LoadProcedure(p.ID)
	if err != nil {
		return err
	}
	if ok && row.Scope != ev.Stream {
		return nil
	}
	if !ok {
		row = sqlstore.ProcedureRow{ID: p.ID, Scope: ev.Stream, CreatedSeq: ev.Seq}
	}
	state, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("procedure %s: %w", p.ID, err)
	}
	row.Stage, row.Trigger, row.State = p.Stage, p.Trigger, string(state)
	row.Version++
	row.UpdatedSeq, row.UpdatedAt = ev.Seq, ev.Time
	return f.tx.PutProcedure(&row, &sqlstore.ProcedureVersion{ProcedureID: p.ID, Version: row.Version,
		Stream: ev.Stream, Seq: ev.Seq, EventID: ev.ID, Time: ev.Time, Stage: p.Stage, Reason: o.Reason,
		Evidence: o.EvidenceEventIDs, State: string(state)})
}
