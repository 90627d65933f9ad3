package projector

import (
	"context"
	"slices"

	"dshmem/events"
	"dshmem/markdown"
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
	data, err := t.summaryText(f, ev, n)
	if err != nil {
		return err
	}
	sum := SHA256(data)
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
	vs := append(t.versions[ev.Stream], sqlstore.SummaryVersion{Seq: ev.Seq, Time: ev.Time, SHA256: sum, Content: string(data)})
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

// summaryTop is the top of a workspace summary's ranking as a render
// read it: the first pool shown entries in sqlstore.SummaryCompare order
// (all of them when fewer), and how many the scope showed then.
type summaryTop struct {
	rows  []sqlstore.ProjectedEntry
	md    []markdown.Entry // rows as the summary renders them
	pool  int
	shown int
}

// summaryText renders the workspace summary of ev's stream as of ev,
// which made the scope show shown entries. A remember adds one entry and
// changes no other, so after a render earlier in the call (t.tops, which
// track empties on any event that may change entries otherwise) the new
// top of the ranking is the old one with that entry placed in it: every
// entry not read ranks below all that were. Only when every entry of the
// new top fits in the summary and more are left out is the index read
// again for more, as renderSummary does.
func (t *fileTrack) summaryText(f *fold, ev *events.Envelope, shown int) ([]byte, error) {
	ctx := context.Background()
	r := f.tx.Reader()
	if top := t.tops[ev.Stream]; top != nil && ev.Type == events.TypeMemoryRemember && shown == top.shown+1 {
		x, ok, err := addedEntry(f, ev)
		if err != nil {
			return nil, err
		}
		dir, err := r.Scope(ctx, ev.Stream)
		if err != nil {
			return nil, err
		}
		if ok {
			rows, md := top.rows, top.md
			i, _ := slices.BinarySearchFunc(rows, &x, func(a sqlstore.ProjectedEntry, b *sqlstore.ProjectedEntry) int {
				return sqlstore.SummaryCompare(&a, b)
			})
			if i < top.pool {
				rows = slices.Insert(rows, i, x)
				md = slices.Insert(md, i, summaryEntry(&x))
				if len(rows) > top.pool {
					rows, md = rows[:top.pool], md[:top.pool]
				}
			}
			omitted := shown - len(rows)
			data, kept := markdown.RenderSummaryKept(markdown.SummaryInput{ScopeKey: ev.Stream, Cwd: dir.Cwd, Entries: md, Omitted: omitted})
			if kept < len(md) || omitted <= 0 {
				top.rows, top.md, top.shown = rows, md, shown
				return data, nil
			}
		}
	}
	rd, top, err := renderSummaryTop(ctx, r, ev.Stream)
	if err != nil {
		return nil, err
	}
	t.tops[ev.Stream] = top
	return rd.Data, nil
}

// keepsTops reports whether an event of type typ leaves every entry as
// it was, so the tops a call has read stay true: a remember changes only
// its own entry, which summaryText places; the events of a conversation
// change none. Any other type (a forget, memory ops, a scope's
// lifecycle, a type added later) empties them. It has a second user:
// FoldMade returns the rows its remembers inserted only when every event
// of the fold keepsTops, so a type added here must also leave every
// entry's row unchanged, or a remember answers with a stale entry.
func keepsTops(typ string) bool {
	switch typ {
	case events.TypeMemoryRemember, events.TypeMemoryShown,
		events.TypeSessionStart, events.TypeSessionEnd, events.TypeUserMessage, events.TypeAssistantMessage,
		events.TypeToolCall, events.TypeToolResult, events.TypeCompactionSummary, events.TypeTurnEnd, events.TypeTaskEnd:
		return true
	}
	return false
}

// addedEntry is the entry ev's remember added, as Reader.ShownEntry
// reads it: from the row the fold inserted when it has it (the columns
// hold what was inserted), else from the index.
func addedEntry(f *fold, ev *events.Envelope) (sqlstore.ProjectedEntry, bool, error) {
	id := EntryID(ev.Stream, ev.Seq, 0)
	if a := f.added; a != nil && a.ID == id {
		ok := a.Scope == ev.Stream && (a.Status == statusActive || a.Status == statusConflict)
		if !ok {
			return sqlstore.ProjectedEntry{}, false, nil
		}
		return sqlstore.ProjectedEntry{ID: a.ID, Type: a.Type, Title: a.Title, Description: a.Description, Terms: a.Terms,
			Content: a.Content, Tags: a.Tags, Importance: a.Importance, Status: a.Status, ConflictGroup: a.ConflictGroup,
			Confidence: a.Confidence}, true, nil
	}
	return f.tx.Reader().ShownEntry(context.Background(), ev.Stream, id)
}
