package projector

import (
	"fmt"

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
		if _, err := f.exec(`INSERT INTO shown (session, stream, entry_id, count, last_seq, last_time)
			VALUES (?, ?, ?, 1, ?, ?)
			ON CONFLICT (session, stream, entry_id) DO UPDATE SET
				count = count + 1, last_seq = excluded.last_seq, last_time = excluded.last_time`,
			session, ev.Stream, id, int64(ev.Seq), ev.Time); err != nil {
			return fmt.Errorf("record entry %s shown to %s: %w", id, session, err)
		}
	}
	return nil
}
