package broker

import (
	"context"
	"fmt"
	"strings"

	"dshmem/events/payload"
	"dshmem/sqlstore/tokenize"
)

// ProcedureSource is what the broker asks of an engine for learned
// procedures (observer.Engine.Procedures). A Recaller without it offers
// none.
type ProcedureSource interface {
	Procedures(ctx context.Context, stream string, stages ...string) ([]payload.Procedure, error)
}

// maxPacketProcedures bounds the procedures a packet offers.
const maxPacketProcedures = 1

// procedures returns, as packet entries, the active (P3) procedures of
// stream whose trigger the query q matches: at least two of its distinct
// terms, and at least half of the trigger's. Only P3 procedures are
// read: a candidate, a validated or a deprecated one never reaches a
// packet. A packet offering one is a checklist.
func (b *Broker) procedures(ctx context.Context, stream, q string, cooling map[string]bool) ([]PacketEntry, error) {
	src, ok := b.rec.(ProcedureSource)
	if !ok {
		return nil, nil
	}
	ps, err := src.Procedures(ctx, stream, payload.StageActive)
	if err != nil || len(ps) == 0 {
		return nil, err
	}
	query := map[string]bool{}
	for _, t := range tokenize.Terms(q) {
		query[t] = true
	}
	var out []PacketEntry
	for _, p := range ps {
		if p.Stage != payload.StageActive || cooling[p.ID] {
			continue
		}
		trig := tokenize.Terms(p.Trigger)
		shared := 0
		for _, t := range trig {
			if query[t] {
				shared++
			}
		}
		if shared < 2 || 2*shared < len(trig) {
			continue
		}
		out = append(out, PacketEntry{ID: p.ID, Scope: stream, Title: "Procedure: " + p.Trigger,
			Text: procedureText(p), Score: float64(shared) / float64(len(trig)), Procedure: true})
		if len(out) == maxPacketProcedures {
			break
		}
	}
	return out, nil
}

// procedureText is a procedure's steps and check as one line of a packet.
func procedureText(p payload.Procedure) string {
	var b strings.Builder
	for i, s := range p.Steps {
		fmt.Fprintf(&b, "%d. %s; ", i+1, s)
	}
	b.WriteString("check: " + p.Check)
	if len(p.Preconditions) > 0 {
		b.WriteString(" (" + strings.Join(p.Preconditions, "; ") + ")")
	}
	return b.String()
}
