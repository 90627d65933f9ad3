package projector

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"dshmem/events"
	"dshmem/events/payload"
)

// memory/ops folds the answer of a checkpoint's distiller, or the ops a
// hand edit of a Markdown projection was read back into, into entries.
// The event's data is payload.Ops (written by observer.Engine.Checkpoint;
// by sync for hand edits):
//
//	{"checkpoint":"ck-<16 hex, random, chosen by the writer>",
//	 "session":"…","from":N,"to":M,           the claimed seq range of that session
//	 "distiller":"rules","model":"rules-v1",
//	 "ops":[{"op":"add|revise|supersede|conflict|forget","targetId":…,"oldQuote":…,"newQuote":…,
//	         "evidenceEventIds":[…],"type":…,"title":…,"description":…,"content":…,
//	         "tags":[…],"terms":[…],"importance":N,"confidence":F,"reason":…,
//	         "provenance":"distiller|hand-edit"}, …]}
//
// Op i of the event at (stream, seq), in array order:
//
//	add        a new entry EntryID(stream, seq, i), active, version 1.
//	revise     the target's next version: each field the op gives
//	           replaces the target's ("description":"" clears it; an
//	           absent field keeps it), status unchanged.
//	supersede  a new entry EntryID(stream, seq, i), active, supersedes =
//	           target; the target becomes superseded, superseded_by = the
//	           new id, in a new version. Both versions are recorded.
//	conflict   a new entry EntryID(stream, seq, i) in status conflict, and
//	           the target set to conflict too, both in the target's group
//	           if it has one, else in ConflictGroupID(stream, seq, i).
//	forget     the target becomes forgotten.
//
// A target is an entry of the event's own stream (never another's: folds
// of different streams commute) that is not forgotten, and for all but
// forget not superseded either.
// An op whose target is missing, in another stream, superseded or
// forgotten by the time it is folded, an unknown op name, an op that does
// not decode, or an add without title and content is skipped: it writes
// nothing, and the op index still counts it, so later ops keep their ids.
// A memory/ops event never fails a fold; replay must always succeed.
//
// When a forget or a supersede takes a member out of its conflict group
// and one contender is left, that one is active again (resolveGroup).
//
// Text is taken as written (an add from a hand edit keeps its content
// byte for byte); a missing title is the content's first line; a type
// outside the memory model is "fact"; importance is clamped to 0–3 and is
// 1 when absent; confidence is clamped to 0–1 and is 1 when absent. An
// entry's provenance lists the op's evidence event ids and then the
// memory/ops event's id, with the op's reason, provenance ("distiller",
// "hand-edit") and the checkpoint id.

// ConflictGroupID derives the id of the conflict group opened by the
// pos-th op of the event at (stream, seq): "cg-" and the first 16 hex
// digits of sha256("conflict:stream:seq:pos"). Part of the on-disk format
// (group ids appear in Markdown and later events); do not change.
func ConflictGroupID(stream string, seq uint64, pos int) string {
	sum := sha256.Sum256([]byte("conflict:" + stream + ":" + strconv.FormatUint(seq, 10) + ":" + strconv.Itoa(pos)))
	return "cg-" + hex.EncodeToString(sum[:8])
}

// ops folds a memory/ops event (see the comment at the top of this file).
// An op that does not decode is the zero payload.Op, whose empty name
// makes it a skipped op that keeps its index.
func (f *fold) ops(ev *events.Envelope) error {
	var d payload.Ops
	if payload.Unmarshal(ev.Data, &d) != nil {
		return nil
	}
	for i := range d.Ops {
		if err := f.op(ev, d.Checkpoint, i, &d.Ops[i]); err != nil {
			return fmt.Errorf("op %d (%s): %w", i, d.Ops[i].Op, err)
		}
	}
	return nil
}

func (f *fold) op(ev *events.Envelope, checkpoint string, i int, o *payload.Op) error {
	name := strings.ToLower(strings.TrimSpace(o.Op))
	prov := provenance{Reason: o.Reason, Source: o.Provenance, Checkpoint: checkpoint}
	for _, id := range o.EvidenceEventIDs {
		prov.EventIDs = appendNew(prov.EventIDs, id)
	}
	prov.EventIDs = appendNew(prov.EventIDs, ev.ID)

	if name == payload.OpAdd {
		e, ok := newEntry(ev, i, o, "")
		if !ok {
			return nil
		}
		if taken, err := f.entryExists(e.id); err != nil || taken {
			return err
		}
		e.prov = prov
		return f.addEntry(ev, e, "add", o.Reason)
	}
	if payload.KnownEvidenceOp(name) {
		return f.evidenceOp(ev, name, o) // evidence.go
	}
	if !payload.KnownOp(name) {
		return nil
	}
	t, err := f.loadEntry(o.TargetID, ev.Stream)
	if err != nil || t == nil || t.status == statusForgotten {
		return err
	}
	if name == payload.OpForget {
		return f.forgetEntry(ev, t, o.Reason)
	}
	if t.status == statusSuperseded {
		return nil
	}
	switch name {
	case payload.OpRevise:
		reindex := t.revise(o)
		t.prov.EventIDs = appendNew(t.prov.EventIDs, prov.EventIDs...)
		if o.Reason != "" {
			t.prov.Reason = o.Reason
		}
		return f.updateEntry(ev, t, "revise", o.Reason, reindex)

	case payload.OpSupersede:
		n, ok := newEntry(ev, i, o, t.typ)
		if !ok {
			return nil
		}
		if taken, err := f.entryExists(n.id); err != nil || taken {
			return err
		}
		n.supersedes, n.prov = t.id, prov
		if err := f.addEntry(ev, n, "supersede", joinReasons(o.Reason, "supersedes "+t.id)); err != nil {
			return err
		}
		t.status, t.supersededBy = statusSuperseded, n.id
		if err := f.updateEntry(ev, t, "supersede", joinReasons(o.Reason, "superseded by "+n.id), false); err != nil {
			return err
		}
		return f.resolveGroup(ev, t.scope, t.conflictGroup)

	case payload.OpConflict:
		n, ok := newEntry(ev, i, o, t.typ)
		if !ok {
			return nil
		}
		if taken, err := f.entryExists(n.id); err != nil || taken {
			return err
		}
		group := t.conflictGroup
		if group == "" {
			group = ConflictGroupID(ev.Stream, ev.Seq, i)
		}
		n.status, n.conflictGroup, n.prov = statusConflict, group, prov
		if err := f.addEntry(ev, n, "conflict", joinReasons(o.Reason, "conflicts with "+t.id+" in "+group)); err != nil {
			return err
		}
		if t.status == statusConflict && t.conflictGroup == group {
			return nil // already a member: nothing of it changes
		}
		t.status, t.conflictGroup = statusConflict, group
		return f.updateEntry(ev, t, "conflict", joinReasons(o.Reason, "conflicts with "+n.id+" in "+group), false)
	}
	return nil
}

// newEntry builds the entry the pos-th op of ev creates, in the event's
// stream; typ is the type when the op names none that is valid ("" means
// fact). ok is false when the op has neither title nor content.
func newEntry(ev *events.Envelope, pos int, o *payload.Op, typ string) (*entry, bool) {
	title := strings.TrimSpace(o.Title)
	content := o.Content
	if strings.TrimSpace(content) == "" {
		if title == "" {
			return nil, false
		}
		content = title
	}
	if title == "" {
		title = titleFrom(content)
	}
	e := &entry{
		id:         EntryID(ev.Stream, ev.Seq, pos),
		scope:      ev.Stream,
		typ:        strings.ToLower(strings.TrimSpace(o.Type)),
		title:      title,
		content:    content,
		tags:       cleanTags(o.Tags),
		terms:      joinTerms(o.Terms),
		importance: valueOr(o.Importance, payload.DefaultImportance),
		confidence: valueOr(o.Confidence, payload.DefaultConfidence),
		status:     statusActive,
		version:    1,
	}
	if o.Description != nil {
		e.description = strings.TrimSpace(*o.Description)
	}
	if !payload.KnownEntryType(e.typ) {
		e.typ = typ
		if !payload.KnownEntryType(e.typ) {
			e.typ = payload.DefaultEntryType
		}
	}
	return e, true
}

// revise applies the fields o gives to e and reports whether e's indexed
// text changed.
func (e *entry) revise(o *payload.Op) (textChanged bool) {
	before := [5]string{e.title, e.description, e.terms, e.content, strings.Join(e.tags, "\x00")}
	if t := strings.ToLower(strings.TrimSpace(o.Type)); payload.KnownEntryType(t) {
		e.typ = t
	}
	if t := strings.TrimSpace(o.Title); t != "" {
		e.title = t
	}
	if o.Description != nil {
		e.description = strings.TrimSpace(*o.Description)
	}
	if strings.TrimSpace(o.Content) != "" {
		e.content = o.Content
	}
	if o.Terms != nil {
		e.terms = joinTerms(o.Terms)
	}
	if o.Tags != nil {
		e.tags = cleanTags(o.Tags)
	}
	e.importance = valueOr(o.Importance, e.importance)
	e.confidence = valueOr(o.Confidence, e.confidence)
	after := [5]string{e.title, e.description, e.terms, e.content, strings.Join(e.tags, "\x00")}
	return before != after
}

// entryExists reports whether an entry with id exists in any scope: ids
// derive from (stream, seq, pos) so they never collide in practice, but
// a fold must not fail on the UNIQUE constraint if they ever did.
func (f *fold) entryExists(id string) (bool, error) {
	return f.tx.EntryExists(id)
}

// joinTerms is the terms column of terms: joined with ", ", blanks and
// repeats dropped.
func joinTerms(terms []string) string {
	return strings.Join(cleanTags(terms), ", ")
}

// appendNew appends the items of add that list does not hold yet.
func appendNew(list []string, add ...string) []string {
	for _, s := range add {
		if s != "" && !slices.Contains(list, s) {
			list = append(list, s)
		}
	}
	return list
}

func joinReasons(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
