package observer

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"dshmem/events/payload"
	"dshmem/sqlstore"
)

// EntryDetail is one entry with everything known about where it came
// from: `dshmem show ID --json` prints it.
type EntryDetail struct {
	Entry      Entry             `json:"entry"`
	Versions   []EntryVersion    `json:"versions"`
	Provenance []ProvenanceEvent `json:"provenance"`
}

// ProvenanceEvent is an event an entry rests on (its provenance's
// eventIds: the evidence, then the event that wrote it), as the index
// holds it. Text is what the event says, redacted, or "" when it carries
// no text.
type ProvenanceEvent struct {
	ID      string `json:"id"`
	Found   bool   `json:"found"` // false: no such event in the index (never folded, or purged)
	Stream  string `json:"stream,omitempty"`
	Seq     uint64 `json:"seq,omitempty"`
	Type    string `json:"type,omitempty"`
	Time    string `json:"time,omitempty"`
	Session string `json:"session,omitempty"`
	Text    string `json:"text,omitempty"`
}

// ShowEntry returns entry id with its versions (oldest first) and its
// provenance events resolved to their type, time and redacted text. An
// unknown id wraps ErrUnknownEntry.
func (e *Engine) ShowEntry(ctx context.Context, id string) (EntryDetail, error) {
	en, err := e.Entry(ctx, id)
	if err != nil {
		return EntryDetail{}, err
	}
	vs, err := e.History(ctx, id)
	if err != nil {
		return EntryDetail{}, err
	}
	var prov struct {
		EventIDs []string `json:"eventIds"`
	}
	_ = json.Unmarshal(en.Provenance, &prov) // a bad column shows no provenance
	d := EntryDetail{Entry: en, Versions: vs, Provenance: []ProvenanceEvent{}}
	if d.Versions == nil {
		d.Versions = []EntryVersion{}
	}
	red := e.red
	if red == nil {
		red = NewRedactor()
	}
	for _, pid := range prov.EventIDs {
		pe, err := e.provenanceEvent(ctx, en.Scope, pid)
		if err != nil {
			return EntryDetail{}, err
		}
		pe.Text, _ = red.String(pe.Text)
		d.Provenance = append(d.Provenance, pe)
	}
	return d, nil
}

// provenanceEvent looks an event id up in the entry's own stream, then
// in any stream (evidence may sit in the session's stream).
func (e *Engine) provenanceEvent(ctx context.Context, scope, id string) (ProvenanceEvent, error) {
	for _, stream := range []string{scope, ""} {
		evs, err := e.store.Events(ctx, sqlstore.EventFilter{Stream: stream, ID: id})
		if err != nil {
			return ProvenanceEvent{}, fmt.Errorf("look up event %s: %w", id, err)
		}
		if len(evs) > 0 {
			ev := evs[0]
			return ProvenanceEvent{ID: id, Found: true, Stream: ev.Stream, Seq: ev.Seq, Type: ev.Type, Time: ev.Time,
				Session: ev.Session, Text: eventText(ev.Type, ev.Data)}, nil
		}
	}
	return ProvenanceEvent{ID: id}, nil
}

// eventText is the text an event carries, for people: a message's text,
// a remember's content, a task's request and result, a checkpoint's ops
// counted.
func eventText(typ string, data json.RawMessage) string {
	p, err := payload.Decode(typ, data)
	if err != nil {
		return ""
	}
	switch d := p.(type) {
	case payload.UserMessage:
		return d.Text
	case payload.AssistantMessage:
		return d.Text
	case payload.ToolResult:
		return d.Text
	case payload.CompactionSummary:
		return d.Text
	case payload.TaskEnd:
		return strings.TrimSpace(d.Request + "\n" + d.Result)
	case payload.Remember:
		return d.Content
	case payload.Forget:
		return d.Reason
	case payload.SessionEnd:
		return d.Summary
	case payload.Ops:
		return fmt.Sprintf("%d op(s) of checkpoint %s", len(d.Ops), d.Checkpoint)
	case payload.FileEdit:
		return d.Path
	}
	return ""
}
