package observer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
)

// ProvenanceUI is the provenance of an op a person made on the settings
// page (observer/ui). Part of the on-disk format; do not change.
const ProvenanceUI = "ui"

// ErrEntrySuperseded is returned (wrapped, with the id) when revising an
// entry that a newer one replaced: revise the newer one.
var ErrEntrySuperseded = errors.New("entry superseded")

// ErrNoChange is returned (wrapped) by a revise that would change nothing.
var ErrNoChange = errors.New("nothing to change")

// ReviseRequest is a person's edit of one entry. A field left zero (""
// or nil) keeps the entry's value; Description and Tags, when non-nil,
// replace it, an empty one clearing it.
type ReviseRequest struct {
	Title       string
	Content     string
	Description *string
	Type        string   // one of the entry types; "" keeps it
	Tags        []string // nil keeps them; empty clears them
	Importance  *int     // 0–3
	Reason      string   // why, kept in the entry's history
	// Provenance names who made the edit: ProvenanceUI (the default) or
	// payload.ProvenanceHandEdit.
	Provenance string
	// Time is the event time; zero means now.
	Time time.Time
}

// Revise writes the edit as a memory/ops event with one revise op into
// the entry's own stream (the path of distiller and hand-edit ops, so
// replay folds it the same way) and returns the entry as it now is. An
// unknown id (ErrUnknownEntry), a forgotten entry (ErrEntryForgotten), a
// superseded one (ErrEntrySuperseded), an edit that changes nothing
// (ErrNoChange) or content that is only a secret (*RefusedError) is
// refused before anything is written.
func (e *Engine) Revise(ctx context.Context, id string, r ReviseRequest) (Entry, error) {
	en, err := e.Entry(ctx, id)
	if err != nil {
		return Entry{}, err
	}
	switch en.Status {
	case payload.StatusForgotten:
		return Entry{}, fmt.Errorf("%w: %s was forgotten at %s; remember it again instead", ErrEntryForgotten, id, en.UpdatedAt)
	case payload.StatusSuperseded:
		return Entry{}, fmt.Errorf("%w: %s was replaced by %s; revise that one", ErrEntrySuperseded, id, en.SupersededBy)
	}
	op, err := reviseOp(en, r)
	if err != nil {
		return Entry{}, err
	}
	rid, err := RandomHex()
	if err != nil {
		return Entry{}, err
	}
	// The checkpoint field names where the ops came from, as sync's
	// "sync-…" does: a page edit is no checkpoint of a session.
	raw, err := payload.Marshal(payload.Ops{Checkpoint: op.Provenance + "-" + rid, Distiller: op.Provenance, Ops: []payload.Op{op}})
	if err != nil {
		return Entry{}, fmt.Errorf("revise %s: %w", id, err)
	}
	// The projector applies an op only to entries of the event's own
	// stream, so the event goes to the entry's scope.
	env := events.Envelope{V: events.CurrentVersion, ID: "dshmem:revise:" + rid, Type: events.TypeMemoryOps,
		Time: EventTime(r.Time), Stream: en.Scope, Data: raw}
	if _, err := e.appendOwn(ctx, env); err != nil {
		return Entry{}, err
	}
	return e.Entry(ctx, id)
}

// reviseOp checks r against en and returns the op that makes the edit,
// with only the fields that change.
func reviseOp(en Entry, r ReviseRequest) (payload.Op, error) {
	prov := r.Provenance
	switch prov {
	case "":
		prov = ProvenanceUI
	case ProvenanceUI, payload.ProvenanceHandEdit:
	default:
		return payload.Op{}, fmt.Errorf("revise %s: provenance %q: use %q or %q", en.ID, prov, ProvenanceUI, payload.ProvenanceHandEdit)
	}
	op := payload.Op{Op: payload.OpRevise, TargetID: en.ID, Reason: strings.TrimSpace(r.Reason), Provenance: prov}
	changed := false
	if t := strings.TrimSpace(r.Title); t != "" && t != en.Title {
		op.Title, changed = t, true
	}
	if strings.TrimSpace(r.Content) != "" && r.Content != en.Content {
		if OnlySecret(r.Content) {
			return payload.Op{}, &RefusedError{Field: "content", Msg: "is nothing but a credential; dshmem does not store secrets as memories (remember where the secret is kept instead)"}
		}
		op.Content, changed = r.Content, true
	}
	if r.Description != nil && strings.TrimSpace(*r.Description) != en.Description {
		d := strings.TrimSpace(*r.Description)
		op.Description, changed = &d, true
	}
	if t := strings.ToLower(strings.TrimSpace(r.Type)); t != "" && t != en.Type {
		if !payload.KnownEntryType(t) {
			return payload.Op{}, &RefusedError{Field: "type", Msg: fmt.Sprintf("%q is not an entry type (use one of %s)", r.Type, strings.Join(payload.EntryTypes, ", "))}
		}
		op.Type, changed = t, true
	}
	if r.Tags != nil {
		var tags []string
		for _, t := range r.Tags {
			if t = strings.TrimSpace(t); t != "" && !slices.Contains(tags, t) {
				tags = append(tags, t)
			}
		}
		if !slices.Equal(tags, en.Tags) && (len(tags) > 0 || len(en.Tags) > 0) {
			if tags == nil {
				tags = []string{}
			}
			op.Tags, changed = tags, true
		}
	}
	if r.Importance != nil && *r.Importance != en.Importance {
		if *r.Importance < payload.MinImportance || *r.Importance > payload.MaxImportance {
			return payload.Op{}, &RefusedError{Field: "importance", Msg: fmt.Sprintf("%d is out of range (%d..%d)", *r.Importance, payload.MinImportance, payload.MaxImportance)}
		}
		imp := *r.Importance
		op.Importance, changed = &imp, true
	}
	if !changed {
		return payload.Op{}, fmt.Errorf("%w: the edit of %s gives the entry's current title, content, type, tags and importance", ErrNoChange, en.ID)
	}
	return op, nil
}
