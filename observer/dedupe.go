package observer

import (
	"fmt"
	"strings"

	"dshmem/events"
	"dshmem/sqlstore"
)

// heldID is what dedupe knows of an id already used in a stream: the
// content of its event (eventContent), its seq when the index has it (0
// while it is being written or when this call appends it), and the row.
type heldID struct {
	content string
	seq     uint64
	stored  *sqlstore.StoredEvent
}

// eventContent is what makes two events with one id the same event: type,
// time, session and data (as logged: validated, compacted, redacted). The
// cwd is not kept in the index; it names the stream, which is compared
// already.
func eventContent(typ, time, session, data string) string {
	return typ + "\x00" + time + "\x00" + session + "\x00" + data
}

// sameContent reports whether content is the event held under an id. A
// stored event written before the redactor learnt a rule differs from
// the same event redacted today: it is redacted again and compared once
// more before the two are called different.
func (e *Engine) sameContent(held heldID, content string) bool {
	if held.content == content {
		return true
	}
	if held.stored == nil {
		return false
	}
	env := events.Envelope{Data: []byte(held.stored.Data)}
	if len(env.Data) == 0 {
		return false
	}
	if _, err := e.red.Envelope(&env); err != nil {
		return false
	}
	return eventContent(held.stored.Type, held.stored.Time, held.stored.Session, string(env.Data)) == content
}

// ownOperationID reports whether id is one dshmem mints for an operation
// rather than for one event: a checkpoint's commit (dshmem:checkpoint:…),
// a remember, forget or lifecycle change (dshmem:…), a hand edit read
// back (sync:…). Their retries carry a new time, or a checkpoint's a new
// answer, and the first one stands: a retry is a duplicate, not a reuse.
func ownOperationID(id string) bool {
	return strings.HasPrefix(id, "dshmem:") || strings.HasPrefix(id, "sync:")
}

// reusedID is the refusal of an event whose id another event of the
// stream holds.
func reusedID(line int, id, stream string, seq uint64) *LineError {
	where := "an event still being written"
	if seq > 0 {
		where = fmt.Sprintf("seq %d", seq)
	}
	return &LineError{Line: line, Field: "id", Msg: fmt.Sprintf(
		"%s is already the id of another event in stream %s (%s), with other content: an id names one event; give this one a new id",
		QuoteClip(id), stream, where)}
}
