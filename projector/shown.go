package projector

import (
	"dshmem/events"
	"dshmem/events/payload"
)

// shown counts, per session, how often each entry was shown to it
// (memory/shown {entries, session, mode}), for recall's already-shown
// penalty. The session is data.session, else the envelope's. Ids are not
// checked against entries: an entry may live in another stream, and a
// fold must not read across streams. Repeats within one event count once.
func (f *fold) shown(ev *events.Envelope) error {
	var d payload.Shown
	if payload.Unmarshal(ev.Data, &d) != nil {
		return nil
	}
	session := d.Session
	if session == "" {
		session = ev.Session
	}
	if session == "" {
		return nil
	}
	seen := map[string]bool{}
	for _, id := range d.Entries {
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		if err := f.tx.RecordShown(session, ev.Stream, id, ev.Seq, ev.Time); err != nil {
			return err
		}
	}
	return nil
}
