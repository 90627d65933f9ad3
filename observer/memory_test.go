package observer

import (
	"context"
	"errors"
	"strings"
	"testing"

	"dshmem/observer/distill"
	"dshmem/projector"
)

func TestRememberAndForget(t *testing.T) {
	ctx := context.Background()
	eng := ckOpen(t, t.TempDir())
	imp := 3
	en, err := eng.Remember(ctx, RememberRequest{Cwd: "/home/u/proj", Content: "Use pnpm, not npm", Type: "preference",
		Tags: []string{"node", "tooling"}, Importance: &imp, Time: ckT0})
	if err != nil {
		t.Fatal(err)
	}
	stream := StreamForCwd("/home/u/proj")
	if en.ID != projector.EntryID(stream, 1, 0) || en.Scope != stream || en.Type != "preference" || en.Importance != 3 ||
		strings.Join(en.Tags, ",") != "node,tooling" || en.Status != distill.StatusActive || en.Title != "Use pnpm, not npm" {
		t.Fatalf("got %+v", en)
	}
	g, err := eng.Remember(ctx, RememberRequest{Content: "I am in Berlin (UTC+1)", Time: ckT0})
	if err != nil || g.Scope != GlobalStream || g.Importance != 1 || g.Type != "fact" {
		t.Fatalf("global remember: got %+v, %v", g, err)
	}

	t.Run("ErrOnlySecret", func(t *testing.T) {
		_, err := eng.Remember(ctx, RememberRequest{Content: "sk-proj-8fK2mQ9xLr4TzW1vB7nC3dE5gH6jP0sA"})
		var re *RefusedError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "content is nothing but a credential") {
			t.Fatalf("got %v, want a refusal naming the content", err)
		}
		if es, _ := eng.Entries(ctx, EntryFilter{}); len(es) != 2 {
			t.Errorf("got %d entries after a refused remember, want 2", len(es))
		}
	})
	t.Run("ErrEmpty", func(t *testing.T) {
		var re *RefusedError
		if _, err := eng.Remember(ctx, RememberRequest{Content: "  "}); !errors.As(err, &re) {
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
		if _, err := eng.Forget(ctx, en.ID, ""); !errors.Is(err, ErrEntryForgotten) {
			t.Fatalf("got %v", err)
		}
		if lg := eng.Log().LastSeq(stream); lg != 2 {
			t.Errorf("a refused forget was written: stream ends at %d", lg)
		}
	})
	t.Run("ErrUnknownEntry", func(t *testing.T) {
		_, err := eng.Forget(ctx, "m-0000000000000000", "")
		if !errors.Is(err, ErrUnknownEntry) || !strings.Contains(err.Error(), "m-0000000000000000") {
			t.Fatalf("got %v", err)
		}
		if _, err := eng.History(ctx, "m-nope"); !errors.Is(err, ErrUnknownEntry) {
			t.Fatalf("history: got %v", err)
		}
	})
	t.Run("Entries", func(t *testing.T) {
		active, err := eng.Entries(ctx, EntryFilter{Statuses: []string{"active"}})
		if err != nil || len(active) != 1 || active[0].ID != g.ID {
			t.Fatalf("got %+v, %v", active, err)
		}
		scoped, err := eng.Entries(ctx, EntryFilter{Scopes: []string{stream}})
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
	w := ckOpen(t, root)
	if _, err := w.Remember(ctx, RememberRequest{Content: "Use pnpm", Time: ckT0}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := Open(ctx, root, Options{ReadOnly: true})
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
		"Remember":   func() error { _, err := ro.Remember(ctx, RememberRequest{Content: "x"}); return err },
		"Forget":     func() error { _, err := ro.Forget(ctx, projector.EntryID(GlobalStream, 1, 0), ""); return err },
		"Checkpoint": func() error { _, err := ro.Checkpoint(ctx, CheckpointRequest{Force: true}); return err },
		"Sync":       func() error { _, err := ro.Sync(ctx); return err },
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			if err := write(); !errors.Is(err, ErrReadOnly) {
				t.Fatalf("got %v, want ErrReadOnly", err)
			}
		})
	}
	es, err := ro.Entries(ctx, EntryFilter{})
	if err != nil || len(es) != 1 || es[0].Status != distill.StatusActive {
		t.Fatalf("entries after refused writes: got %+v, %v; want the one active entry", es, err)
	}
}
