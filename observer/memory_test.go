package observer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"dshmem/observer"
	"dshmem/observer/checkpoint"
	"dshmem/observer/distill"
	"dshmem/observer/handedit"
	"dshmem/projector"
)

func TestRememberAndForget(t *testing.T) {
	ctx := context.Background()
	eng := openEngine(t, t.TempDir())
	imp := 3
	en, err := eng.Remember(ctx, observer.RememberRequest{Cwd: "/home/u/proj", Content: "Use pnpm, not npm", Type: "preference",
		Tags: []string{"node", "tooling"}, Importance: &imp, Time: memT0})
	if err != nil {
		t.Fatal(err)
	}
	stream := observer.StreamForCwd("/home/u/proj")
	if en.ID != projector.EntryID(stream, 1, 0) || en.Scope != stream || en.Type != "preference" || en.Importance != 3 ||
		strings.Join(en.Tags, ",") != "node,tooling" || en.Status != distill.StatusActive || en.Title != "Use pnpm, not npm" {
		t.Fatalf("got %+v", en)
	}
	g, err := eng.Remember(ctx, observer.RememberRequest{Content: "I am in Berlin (UTC+1)", Time: memT0})
	if err != nil || g.Scope != observer.GlobalStream || g.Importance != 1 || g.Type != "fact" {
		t.Fatalf("global remember: got %+v, %v", g, err)
	}

	t.Run("ErrOnlySecret", func(t *testing.T) {
		_, err := eng.Remember(ctx, observer.RememberRequest{Content: "sk-proj-8fK2mQ9xLr4TzW1vB7nC3dE5gH6jP0sA"})
		var re *observer.RefusedError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "content is nothing but a credential") {
			t.Fatalf("got %v, want a refusal naming the content", err)
		}
		if es, _ := eng.Entries(ctx, observer.EntryFilter{}); len(es) != 2 {
			t.Errorf("got %d entries after a refused remember, want 2", len(es))
		}
	})
	t.Run("ErrEmpty", func(t *testing.T) {
		var re *observer.RefusedError
		if _, err := eng.Remember(ctx, observer.RememberRequest{Content: "  "}); !errors.As(err, &re) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("Forget", func(t *testing.T) {
		got, err := eng.Forget(ctx, en.ID, "we moved to bun")
		if err != nil || got.Status != distill.StatusForgotten || got.Version != 2 {
			t.Fatalf("got %+v, %v", got, err)
		}
		// The forget went to the entry's own stream.
		if lg := eng.Log().LastSeq(stream); lg != 2 {
			t.Errorf("stream %s ends at seq %d, want 2", stream, lg)
		}
		h, err := eng.History(ctx, en.ID)
		if err != nil || len(h) != 2 || h[0].Op != "add" || h[0].EventType != "memory/remember" ||
			h[1].Op != "forget" || h[1].Reason != "we moved to bun" || h[1].Seq != 2 {
			t.Errorf("history: got %+v, %v", h, err)
		}
	})
	t.Run("ErrEntryForgotten", func(t *testing.T) {
		if _, err := eng.Forget(ctx, en.ID, ""); !errors.Is(err, observer.ErrEntryForgotten) {
			t.Fatalf("got %v", err)
		}
		if lg := eng.Log().LastSeq(stream); lg != 2 {
			t.Errorf("a refused forget was written: stream ends at %d", lg)
		}
	})
	t.Run("ErrUnknownEntry", func(t *testing.T) {
		_, err := eng.Forget(ctx, "m-0000000000000000", "")
		if !errors.Is(err, observer.ErrUnknownEntry) || !strings.Contains(err.Error(), "m-0000000000000000") {
			t.Fatalf("got %v", err)
		}
		if _, err := eng.History(ctx, "m-nope"); !errors.Is(err, observer.ErrUnknownEntry) {
			t.Fatalf("history: got %v", err)
		}
	})
	t.Run("Entries", func(t *testing.T) {
		active, err := eng.Entries(ctx, observer.EntryFilter{Statuses: []string{"active"}})
		if err != nil || len(active) != 1 || active[0].ID != g.ID {
			t.Fatalf("got %+v, %v", active, err)
		}
		scoped, err := eng.Entries(ctx, observer.EntryFilter{Scopes: []string{stream}})
		if err != nil || len(scoped) != 1 || scoped[0].ID != en.ID {
			t.Fatalf("got %+v, %v", scoped, err)
		}
	})
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
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := observer.Open(ctx, root, observer.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
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
			if err := write(); !errors.Is(err, observer.ErrReadOnly) {
				t.Fatalf("got %v, want ErrReadOnly", err)
			}
		})
	}
	es, err := ro.Entries(ctx, observer.EntryFilter{})
	if err != nil || len(es) != 1 || es[0].Status != distill.StatusActive {
		t.Fatalf("entries after refused writes: got %+v, %v; want the one active entry", es, err)
	}
}

var memT0 = time.Date(2026, 8, 18, 10, 0, 0, 0, time.UTC)

func openEngine(t *testing.T, root string) *observer.Engine {
	t.Helper()
	eng, err := observer.Open(context.Background(), root, observer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}
