package observer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/observer/checkpoint"
	"dshmem/observer/handedit"
	"dshmem/projector"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRememberAndForget(t *testing.T) {
	ctx := context.Background()
	eng := openEngine(t, t.TempDir())
	imp := 3
	en, err := eng.Remember(ctx, observer.RememberRequest{Cwd: "/home/u/proj", Content: "Use pnpm, not npm", Type: "preference",
		Tags: []string{"node", "tooling"}, Importance: &imp, Time: memT0})
	require.NoError(t, err)
	stream := observer.StreamForCwd("/home/u/proj")
	require.Equal(t, projector.EntryID(stream, 1, 0), en.ID, "got %+v", en)
	require.Equal(t, stream, en.Scope, "got %+v", en)
	require.EqualValues(t, "preference", en.Type, "got %+v", en)
	require.EqualValues(t, 3, en.Importance, "got %+v", en)
	require.EqualValues(t, "node,tooling", strings.Join(en.Tags, ","), "got %+v", en)
	require.Equal(t, payload.StatusActive, en.Status, "got %+v", en)
	require.EqualValues(t, "Use pnpm, not npm", en.Title, "got %+v", en)
	g, err := eng.Remember(ctx, observer.RememberRequest{Content: "I am in Berlin (UTC+1)", Time: memT0})
	require.NoError(t, err, "global remember: got %+v, %v", g, err)
	require.Equal(t, observer.GlobalStream, g.Scope, "global remember: got %+v, %v", g, err)
	require.EqualValues(t, 1, g.Importance, "global remember: got %+v, %v", g, err)
	require.EqualValues(t, "fact", g.Type, "global remember: got %+v, %v", g, err)

	t.Run("ErrOnlySecret", func(t *testing.T) {
		_, err := eng.Remember(ctx, observer.RememberRequest{Content: "sk-proj-8fK2mQ9xLr4TzW1vB7nC3dE5gH6jP0sA"})
		var re *observer.RefusedError
		require.True(t, errors.As(err, &re), "got %v, want a refusal naming the content", err)
		require.Contains(t, err.Error(), "content is nothing but a credential", "got %v, want a refusal naming the content", err)
		es, _ := eng.Entries(ctx, observer.EntryFilter{})
		assert.Len(t, es, 2, "got %d entries after a refused remember, want 2", len(es))
	})
	t.Run("ErrEmpty", func(t *testing.T) {
		var re *observer.RefusedError
		_, err := eng.Remember(ctx, observer.RememberRequest{Content: "  "})
		require.True(t, errors.As(err, &re), "got %v", err)
	})
	t.Run("Forget", func(t *testing.T) {
		got, err := eng.Forget(ctx, en.ID, "we moved to bun")
		require.NoError(t, err, "got %+v, %v", got, err)
		require.Equal(t, payload.StatusForgotten, got.Status, "got %+v, %v", got, err)
		require.EqualValues(t, 2, got.Version, "got %+v, %v", got, err)
		// The forget went to the entry's own stream.
		lg := eng.Log().LastSeq(stream)
		assert.EqualValues(t, 2, lg, "stream %s ends at seq %d, want 2", stream, lg)
		h, err := eng.History(ctx, en.ID)
		assert.False(t, err != nil || len(h) != 2 || h[0].Op != "add" || h[0].EventType != "memory/remember" ||
			h[1].Op != "forget" || h[1].Reason != "we moved to bun" || h[1].Seq != 2, "history: got %+v, %v", h, err)
	})
	t.Run("ErrEntryForgotten", func(t *testing.T) {
		_, err := eng.Forget(ctx, en.ID, "")
		require.ErrorIs(t, err, observer.ErrEntryForgotten, "got %v", err)
		lg := eng.Log().LastSeq(stream)
		assert.EqualValues(t, 2, lg, "a refused forget was written: stream ends at %d", lg)
	})
	t.Run("ErrUnknownEntry", func(t *testing.T) {
		_, err := eng.Forget(ctx, "m-0000000000000000", "")
		require.ErrorIs(t, err, observer.ErrUnknownEntry, "got %v", err)
		require.Contains(t, err.Error(), "m-0000000000000000", "got %v", err)
		if _, err := eng.History(ctx, "m-nope"); !errors.Is(err, observer.ErrUnknownEntry) {
			t.Fatalf("history: got %v", err)
		}
	})
	t.Run("Entries", func(t *testing.T) {
		active, err := eng.Entries(ctx, observer.EntryFilter{Statuses: []string{"active"}})
		require.NoError(t, err, "got %+v, %v", active, err)
		require.Len(t, active, 1, "got %+v, %v", active, err)
		require.Equal(t, g.ID, active[0].ID, "got %+v, %v", active, err)
		scoped, err := eng.Entries(ctx, observer.EntryFilter{Scopes: []string{stream}})
		require.NoError(t, err, "got %+v, %v", scoped, err)
		require.Len(t, scoped, 1, "got %+v, %v", scoped, err)
		require.Equal(t, en.ID, scoped[0].ID, "got %+v, %v", scoped, err)
	})
}

// TestRememberAndForgetWritePayload: the memory/remember and
// memory/forget events the engine writes are events/payload's types as
// payload.Marshal encodes them (fields in payload's order, "<" and "&"
// as typed), and they decode back into what was asked.
func TestRememberAndForgetWritePayload(t *testing.T) {
	ctx := context.Background()
	eng := openEngine(t, t.TempDir())
	imp := 2
	en, err := eng.Remember(ctx, observer.RememberRequest{Content: "Wrap errors as <verb> <object>: %w", Title: "Errors & wrapping",
		Type: payload.TypeRule, Tags: []string{"go", "errors"}, Importance: &imp, Time: memT0})
	require.NoError(t, err)
	_, err = eng.Forget(ctx, en.ID, "style <changed>")
	require.NoError(t, err)
	var evs []events.Envelope
	require.NoError(t, eng.Log().Scan(en.Scope, 0, func(ev events.Envelope) error { evs = append(evs, ev); return nil }))
	require.Len(t, evs, 2, "got %+v", evs)

	for i, want := range []payload.Payload{
		payload.Remember{Content: "Wrap errors as <verb> <object>: %w", Title: "Errors & wrapping", Type: payload.TypeRule,
			Tags: []string{"go", "errors"}, Importance: &imp},
		payload.Forget{EntryID: en.ID, Reason: "style <changed>"},
	} {
		ev := evs[i]
		require.Equal(t, want.EventType(), ev.Type, "event %d", i)
		got, err := payload.Decode(ev.Type, ev.Data)
		require.NoError(t, err, "event %d: %s", i, ev.Data)
		assert.Equal(t, want, got, "event %d: %s", i, ev.Data)
		raw, err := payload.Marshal(want)
		require.NoError(t, err)
		assert.Equal(t, string(raw), string(ev.Data), "event %d: got data %s, want payload.Marshal's bytes", i, ev.Data)
	}
}

// TestReadOnlyRefusesWrites: every write of an engine opened read-only
// fails with ErrReadOnly and leaves the log as it was.
func TestReadOnlyRefusesWrites(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	w := openEngine(t, root)
	if _, err := w.Remember(ctx, observer.RememberRequest{Content: "Use pnpm", Time: memT0}); err != nil {
		t.Fatal(err)
	}
	require.NoError(t, w.Close())
	ro, err := observer.Open(ctx, root, observer.Options{ReadOnly: true})
	require.NoError(t, err)
	defer ro.Close()
	line := []byte(`{"id":"x","type":"user/message","time":"2026-08-18T10:00:00Z","data":{"text":"hi"}}`)
	writes := map[string]func() error{
		"Ingest": func() error { _, _, err := ro.Ingest(ctx, [][]byte{line}); return err },
		"IngestReader": func() error {
			_, _, err := ro.IngestReader(ctx, strings.NewReader(string(line)))
			return err
		},
		"Remember":   func() error { _, err := ro.Remember(ctx, observer.RememberRequest{Content: "x"}); return err },
		"Forget":     func() error { _, err := ro.Forget(ctx, projector.EntryID(observer.GlobalStream, 1, 0), ""); return err },
		"Checkpoint": func() error { _, err := checkpoint.Run(ctx, ro, checkpoint.Request{Force: true}); return err },
		"Sync":       func() error { _, err := handedit.Sync(ctx, ro); return err },
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			err := write()
			require.ErrorIs(t, err, observer.ErrReadOnly, "got %v, want ErrReadOnly", err)
		})
	}
	es, err := ro.Entries(ctx, observer.EntryFilter{})
	require.NoError(t, err, "entries after refused writes: got %+v, %v; want the one active entry", es, err)
	require.Len(t, es, 1, "entries after refused writes: got %+v, %v; want the one active entry", es, err)
	require.Equal(t, payload.StatusActive, es[0].Status, "entries after refused writes: got %+v, %v; want the one active entry", es, err)
}

var memT0 = time.Date(2026, 8, 18, 10, 0, 0, 0, time.UTC)

func openEngine(t *testing.T, root string) *observer.Engine {
	t.Helper()
	eng, err := observer.Open(context.Background(), root, observer.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { eng.Close() })
	return eng
}

// TestRememberSentAgainIsOneEntry: a remember whose answer was lost (a
// cancelled request, a crash) and is sent again, or the same text
// remembered twice in one scope, is one entry; 16 at once too. The same
// text in another scope, or after the entry was forgotten, is a new
// entry.
func TestRememberSentAgainIsOneEntry(t *testing.T) {
	ctx := context.Background()
	eng := openEngine(t, t.TempDir())
	req := observer.RememberRequest{Cwd: "/home/u/again", Content: "Deploy with the blue green script", Type: "decision", Time: memT0}
	first, err := eng.Remember(ctx, req)
	require.NoError(t, err)
	cancelled, stop := context.WithCancel(ctx)
	stop()
	req.Time = memT0.Add(time.Minute)
	again, err := eng.Remember(cancelled, req)
	require.NoError(t, err, "a remember sent again with a cancelled context")
	require.Equal(t, first.ID, again.ID, "sent again: got entry %s, want %s", again.ID, first.ID)
	ids := make(chan string, 16)
	for range 16 {
		go func() {
			en, err := eng.Remember(ctx, observer.RememberRequest{Cwd: "/home/u/again", Content: "Tests run with -race"})
			if err != nil {
				ids <- err.Error()
				return
			}
			ids <- en.ID
		}()
	}
	one := <-ids
	for range 15 {
		require.Equal(t, one, <-ids, "16 remembers of one text at once")
	}
	other, err := eng.Remember(ctx, observer.RememberRequest{Cwd: "/home/u/elsewhere", Content: req.Content})
	require.NoError(t, err)
	require.NotEqual(t, first.ID, other.ID, "another scope is another entry")
	_, err = eng.Forget(ctx, first.ID, "changed")
	require.NoError(t, err)
	renewed, err := eng.Remember(ctx, req)
	require.NoError(t, err)
	require.NotEqual(t, first.ID, renewed.ID, "after a forget, the same text is a new entry")
	require.Equal(t, payload.StatusActive, renewed.Status, "got %+v", renewed)
	es, err := eng.Entries(ctx, observer.EntryFilter{})
	require.NoError(t, err)
	require.Len(t, es, 4, "got %d entries, want 4 (the text, -race, elsewhere, renewed): %+v", len(es), es)
}

// TestRememberLateAfterForget: a remember received before the forget of
// the entry its text made, whose turn came only after the forget (its
// client gave up, sent it again, and forgot the entry that answer
// named), is that first remember, late: it answers the entry as it is
// and makes no new one. So does a remember whose caller has gone. Sent
// by a caller still waiting after the forget, the text is a new entry,
// and sent again then, that entry.
func TestRememberLateAfterForget(t *testing.T) {
	ctx := context.Background()
	eng := openEngine(t, t.TempDir())
	req := observer.RememberRequest{Cwd: "/home/u/late", Content: "Releases are tagged from main", Type: "decision"}
	sent := time.Now() // the first attempt is received here, and waits
	first, err := eng.Remember(ctx, req)
	require.NoError(t, err)
	_, err = eng.Forget(ctx, first.ID, "changed")
	require.NoError(t, err)
	late := req
	late.Received = sent
	got, err := eng.Remember(ctx, late)
	require.NoError(t, err)
	require.Equal(t, first.ID, got.ID, "a remember received before the forget: got %+v", got)
	require.Equal(t, payload.StatusForgotten, got.Status, "got %+v", got)

	gone, stop := context.WithCancel(ctx)
	stop()
	got, err = eng.Remember(gone, req)
	require.NoError(t, err)
	require.Equal(t, first.ID, got.ID, "a remember whose caller has gone: got %+v", got)

	renewed, err := eng.Remember(ctx, req)
	require.NoError(t, err)
	require.NotEqual(t, first.ID, renewed.ID, "sent after the forget, the text is a new entry")
	require.Equal(t, payload.StatusActive, renewed.Status, "got %+v", renewed)
	again, err := eng.Remember(ctx, req)
	require.NoError(t, err)
	require.Equal(t, renewed.ID, again.ID, "the renewed text sent again is the renewed entry: got %+v", again)
	// A forget of another entry after the remember was received does not
	// hold the text back.
	other, err := eng.Remember(ctx, observer.RememberRequest{Cwd: "/home/u/late", Content: "CI runs on every push"})
	require.NoError(t, err)
	_, err = eng.Forget(ctx, renewed.ID, "changed again")
	require.NoError(t, err)
	mark := time.Now()
	_, err = eng.Forget(ctx, other.ID, "not true")
	require.NoError(t, err)
	late.Received = mark
	third, err := eng.Remember(ctx, late)
	require.NoError(t, err)
	require.NotEqual(t, renewed.ID, third.ID, "received after its own forget, before another's: got %+v", third)
	require.Equal(t, payload.StatusActive, third.Status, "got %+v", third)
	// A forget op of memory/ops (the distiller's, a hand edit's) counts
	// as the forget.
	sent = time.Now()
	line, err := json.Marshal(map[string]any{"id": "ops-late-1", "type": events.TypeMemoryOps, "time": "2026-08-18T10:00:00Z",
		"cwd": "/home/u/late", "data": map[string]any{"checkpoint": "late-1", "distiller": "rules",
			"ops": []map[string]any{{"op": payload.OpForget, "targetId": third.ID, "reason": "changed a third time"}}}})
	require.NoError(t, err)
	res, _, err := eng.Ingest(ctx, [][]byte{line})
	require.NoError(t, err)
	require.Equal(t, 1, res.Appended, "the ops event: %+v", res)
	late.Received = sent
	got, err = eng.Remember(ctx, late)
	require.NoError(t, err)
	require.Equal(t, third.ID, got.ID, "a remember received before a forget op: got %+v", got)
	require.Equal(t, payload.StatusForgotten, got.Status, "got %+v", got)
	es, err := eng.Entries(ctx, observer.EntryFilter{})
	require.NoError(t, err)
	n := 0
	for _, en := range es {
		if en.Content == req.Content {
			n++
		}
	}
	require.Equal(t, 3, n, "the text's entries: first, renewed, third: %+v", es)
}

// A remember returns its entry from the fold that made it, without
// reading it back (projector.FoldMade): what it returns must equal what
// the index holds, from concurrent callers (folds of several remembers)
// and beside forgets (folds whose entries are read back).
func TestRememberReturnsEntryAsIndexed(t *testing.T) {
	ctx := context.Background()
	eng := openEngine(t, t.TempDir())
	first, err := eng.Remember(ctx, observer.RememberRequest{Cwd: "/home/u/made", Content: "to be forgotten"})
	require.NoError(t, err)
	var wg sync.WaitGroup
	got := make([]observer.Entry, 48)
	errs := make([]error, len(got))
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := observer.RememberRequest{Cwd: "/home/u/made", Content: fmt.Sprintf("fact %d\nsecond line", i)}
			switch i % 4 {
			case 1:
				imp := 3
				r.Title, r.Type, r.Tags, r.Importance = fmt.Sprintf("  title %d ", i), "decision", []string{" b", "a", "a"}, &imp
			case 2:
				r.Cwd, r.Time = "", memT0
			case 3:
				if i == 3 {
					_, errs[i] = eng.Forget(ctx, first.ID, "mixed into a fold")
					return
				}
			}
			got[i], errs[i] = eng.Remember(ctx, r)
		}()
	}
	wg.Wait()
	for i, en := range got {
		require.NoError(t, errs[i], "call %d", i)
		if en.ID == "" {
			continue
		}
		held, err := eng.Entry(ctx, en.ID)
		require.NoError(t, err)
		require.Equal(t, held, en, "call %d: the entry a remember returned differs from the index's", i)
	}
}
