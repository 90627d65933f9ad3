package projector

import (
	"context"
	"slices"

	"dshmem/events"
	"dshmem/sqlstore"
)

// The versions of a workspace summary that summary_history/ keeps: one
// when a memory event changes the summary's text, decided in the fold's
// transaction right after the event.

// plan finds the memory events of the call whose summary version need
// not be rendered. A remember that adds an entry raises the scope's
// shown count, so it changes the summary's text (the text gives the
// count: its blocks plus its "N more" line): it is a version, known
// without rendering. Walking the call backwards, a remember with at
// least HistoryKeep entry-adding remembers after it, and no other memory
// event of its stream after it (whose comparison would need the newest
// version's text), can only be dropped from summary_history/ before the
// call ends. Events at or below cursor (folded before) do not count.
func (t *fileTrack) plan(evs []events.Envelope, cursor func(string) (uint64, error)) error {
	if !t.on {
		return nil
	}
	later := map[string]int{}
	other := map[string]bool{}
	for i := len(evs) - 1; i >= 0; i-- {
		ev := &evs[i]
		if !IsWorkspace(ev.Stream) || !ChangesEntries(ev.Type) {
			continue
		}
		cur, err := cursor(ev.Stream)
		if err != nil {
			return err
		}
		if ev.Seq <= cur {
			continue
		}
		if ev.Type != events.TypeMemoryRemember {
			other[ev.Stream] = true
			continue
		}
		if _, adds := decodeRemember(ev); !adds {
			continue
		}
		if !other[ev.Stream] && later[ev.Stream] >= HistoryKeep {
			t.unrendered[streamSeq{ev.Stream, ev.Seq}] = true
		}
		later[ev.Stream]++
	}
	return nil
}

// before runs before an event is applied: it reads the scope's shown
// count the first time the call meets a memory event of the stream.
func (t *fileTrack) before(f *fold, ev *events.Envelope) error {
	if !t.on || !IsWorkspace(ev.Stream) || !ChangesEntries(ev.Type) {
		return nil
	}
	if _, ok := t.shown[ev.Stream]; ok {
		return nil
	}
	n, err := f.tx.Reader().ShownCount(context.Background(), ev.Stream)
	t.shown[ev.Stream] = n
	return err
}

// version renders the workspace summary as of ev and keeps it as a
// version when its text differs from the newest version's. Every memory
// event is compared, in every fold, so which versions exist is a
// function of the event prefix, never of how the log was split into
// folds. Only the newest HistoryKeep versions are kept.
func (t *fileTrack) version(f *fold, ev *events.Envelope) error {
	n, err := f.tx.Reader().ShownCount(context.Background(), ev.Stream)
	if err != nil {
		return err
	}
	changed := n != t.shown[ev.Stream]
	t.shown[ev.Stream] = n
	if !changed && ev.Type == events.TypeMemoryRemember {
		return nil // it added no entry, so nothing changed
	}
	if changed && t.unrendered[streamSeq{ev.Stream, ev.Seq}] {
		// A version, dropped again before this call ends (plan): its
		// text is never needed. (t.last goes stale, but no comparison
		// follows in this call.)
		return nil
	}
	r, err := renderSummary(context.Background(), f.tx.Reader(), ev.Stream)
	if err != nil {
		return err
	}
	sum := SHA256(r.Data)
	last, ok := t.last[ev.Stream]
	if !ok {
		if last, err = f.tx.LastSummarySHA(ev.Stream); err != nil {
			return err
		}
	}
	if sum == last {
		t.last[ev.Stream] = last
		return nil
	}
	t.last[ev.Stream] = sum
	vs := append(t.versions[ev.Stream], sqlstore.SummaryVersion{Seq: ev.Seq, Time: ev.Time, SHA256: sum, Content: string(r.Data)})
	if len(vs) > HistoryKeep {
		// Older than HistoryKeep versions of this call: never kept.
		vs = slices.Delete(vs, 0, len(vs)-HistoryKeep)
	}
	t.versions[ev.Stream] = vs
	return nil
}

// writeVersions writes the versions the call made and drops all but the
// newest HistoryKeep of each stream. The rows equal those of writing each
// version as it was made and trimming after each: the newest HistoryKeep
// of the old rows and the new ones.
func (t *fileTrack) writeVersions(f *fold) error {
	for _, stream := range sortedKeys(t.versions) {
		if err := f.tx.AddSummaryVersions(stream, t.versions[stream], HistoryKeep); err != nil {
			return err
		}
	}
	return nil
}
