package scrub

import (
	"bytes"

	"dshmem/events"
	"dshmem/events/payload"
)

// sourceTypes are the event types whose whole text is blanked when an
// event of theirs is a source of a forgotten entry (with Sources): the
// messages and explicit writes an entry is learnt from. A memory/ops
// event is never blanked whole: it holds other entries' ops too.
var sourceTypes = map[string]bool{
	events.TypeUserMessage:      true,
	events.TypeAssistantMessage: true,
	events.TypeToolResult:       true,
	events.TypeTaskEnd:          true,
	events.TypeMemoryRemember:   true,
}

// entryFields are the text fields of a memory/remember that make its
// entry; opEntryFields those of an op.
var (
	entryFields   = map[string]bool{"content": true, "title": true, "description": true, "terms": true}
	opEntryFields = map[string]bool{"ops[].content": true, "ops[].title": true, "ops[].description": true, "ops[].terms[]": true}
)

// rewriter returns the line rewriter of one stream: the fields of a
// forgotten entry's own events (the remember that made it, the ops that
// made or revised it, the quote of an op that superseded it) become
// Marker whole; with Sources, so do the text fields of the events the
// entry was learnt from; in every other text field each needle is
// replaced by Marker — except in the text of an entry that is not
// forgotten (its remember, the ops that make or revise it), which stays
// as it is even where it repeats a forgotten one's words. Nothing but
// text fields changes (payload.RewriteText), so no op, id, type or
// status can.
func (p *plan) rewriter(stream string) events.LineRewriter {
	sp := p.Streams[stream]
	return func(seq uint64, line []byte) ([]byte, bool, error) {
		if sp == nil {
			return line, false, nil
		}
		o := sp.Own[seq]
		if o == nil && !sp.mayHold(line) && !sp.maySource(line) {
			return line, false, nil
		}
		e, err := events.Unmarshal(line)
		if err != nil {
			return nil, false, err
		}
		source := sp.sources[e.ID] && sourceTypes[e.Type]
		var ops []payload.Op
		if e.Type == events.TypeMemoryOps {
			var d payload.Ops
			if payload.Unmarshal(e.Data, &d) == nil {
				ops = d.Ops
			}
		}
		data, changed, err := payload.RewriteText(e.Type, e.Data, func(f payload.TextField, s string) string {
			if s == "" || s == Marker {
				return s
			}
			switch {
			case source, o != nil && o.All:
				return Marker
			case e.Type == events.TypeMemoryRemember && entryFields[f.Path]:
				// Another entry's own text: it is not forgotten, and
				// stays as it is even where it quotes a forgotten one.
				return s
			case f.Op >= 0 && f.Op < len(ops):
				whole, quote := entryOp(stream, seq, f.Op, ops[f.Op], p.ids)
				if whole || quote && f.Path == "ops[].oldQuote" {
					return Marker
				}
				if opEntryFields[f.Path] && liveOp(stream, seq, f.Op, ops[f.Op], p.ids) {
					return s
				}
			}
			return sp.replacer.Replace(s)
		})
		if err != nil || !changed {
			// Data that is not an object has no text fields to scrub.
			return line, false, nil
		}
		e.Data = data
		out, err := events.Marshal(&e)
		if err != nil {
			return nil, false, err
		}
		return out, true, nil
	}
}

// maySource reports whether line may be the envelope of a source event:
// it holds `"id":"<id>"` for one of them.
func (sp *streamPlan) maySource(line []byte) bool {
	for _, pat := range sp.sourcePats {
		if bytes.Contains(line, pat) {
			return true
		}
	}
	return false
}

// mayHold reports whether line may hold a needle: it contains one as
// the log writes it (JSON-escaped, without HTML escaping), or it holds a
// \u escape, under which a needle could hide.
func (sp *streamPlan) mayHold(line []byte) bool {
	for _, n := range sp.escaped {
		if bytes.Contains(line, n) {
			return true
		}
	}
	return len(sp.escaped) > 0 && bytes.Contains(line, []byte(`\u`))
}
