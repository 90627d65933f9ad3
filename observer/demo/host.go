package demo

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/observer/broker"
	"dshmem/observer/checkpoint"
	"dshmem/observer/distill"
	"dshmem/observer/importer"
	"dshmem/sqlstore/recall"
)

// hostAndMemory imports the bundled DSH host logs, distils memory
// from the conversation with the offline rules distiller, corrects a
// fact and recalls it.
func hostAndMemory(ctx context.Context, w io.Writer, say func(string, ...any), eng *observer.Engine, root string) error {
	say("Import DSH host session logs (one written by a live host, zstd-framed; two from its tests).")
	hostDir := filepath.Join(root, "dsh-host-sessions")
	sub, err := fs.Sub(host, "data/dsh")
	if err != nil {
		return err
	}
	if err := os.CopyFS(hostDir, sub); err != nil {
		return fmt.Errorf("unpack the bundled host logs: %w", err)
	}
	rep, err := importer.ImportDSH(ctx, eng, hostDir, importer.Options{})
	if err != nil {
		return err
	}
	for _, f := range rep.Files {
		rel, _ := filepath.Rel(hostDir, f.Path)
		fmt.Fprintf(w, "   %s: %d events, %d appended\n", oneLine(rel, 70), f.Events, f.Appended)
	}
	skipped := 0
	for _, n := range rep.Total.Skipped {
		skipped += n
	}
	fmt.Fprintf(w, "   host rows skipped as not memory (turn/step markers, chunks, …): %d\n", skipped)
	typed, injected, err := hostUserMessages(eng.Log())
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   user messages: %d typed by a person, %d injected by plugins (kept as context, never learnt from)\n", typed, injected)
	rep, err = importer.ImportDSH(ctx, eng, hostDir, importer.Options{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   importing again: %d appended, %d duplicates\n", rep.Total.Appended, rep.Total.Duplicates)

	say("Distil: a checkpoint runs the offline rules distiller over what users typed.")
	at := time.Date(2026, 8, 20, 9, 0, 0, 0, time.UTC)
	if err := userSays(ctx, eng, "demo-s3", "/home/dev/shop-api", at,
		"Remember that the shop database is MySQL 8 on db.internal."); err != nil {
		return err
	}
	results, err := checkpoint.Run(ctx, eng, checkpoint.Request{Force: true, Now: at.Add(time.Minute)})
	if err != nil {
		return err
	}
	narrateCheckpoint(w, results)

	say("The user corrects a fact: the old entry is superseded with the user's own words as evidence.")
	if err := userSays(ctx, eng, "demo-s3", "/home/dev/shop-api", at.Add(2*time.Minute),
		"Correction: the shop database is not MySQL but PostgreSQL 16 now."); err != nil {
		return err
	}
	results, err = checkpoint.Run(ctx, eng, checkpoint.Request{Force: true, Now: at.Add(3 * time.Minute)})
	if err != nil {
		return err
	}
	narrateCheckpoint(w, results)

	say("Recall: entries of the workspace and global scope, ranked; the entry the correction superseded does not come back.")
	scopes := []string{observer.StreamForCwd("/home/dev/shop-api"), observer.GlobalStream}
	for _, q := range []string{"which database does the shop use", "pnpm 依赖"} {
		res, err := eng.Recall(ctx, recall.Query{Text: q, Scopes: scopes, Limit: 3, Now: at.Add(4 * time.Minute)})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "   %q →\n", q)
		for _, it := range res.Items {
			fmt.Fprintf(w, "      [%s, %s] %s\n", it.Status, it.ID, oneLine(it.Text, 80))
		}
		if len(res.Items) == 0 {
			fmt.Fprintf(w, "      %s\n", oneLine(res.Guidance, 100))
		}
	}

	say("What the DSH host plugin (dshmem dsh install) puts into the model's next request in that workspace.")
	sc, err := broker.Context(ctx, eng, broker.ContextRequest{Cwd: "/home/dev/shop-api", Now: at.Add(5 * time.Minute)})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   system prompt, section dshmem:memory (%d bytes; the same bytes in every step, turn and session until a fact changes):\n", len(sc.Section))
	for _, line := range strings.Split(sc.Section, "\n") {
		if strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "<!--") {
			fmt.Fprintf(w, "      │ %s\n", oneLine(line, 96))
		}
	}
	if sc.Dynamic != "" {
		fmt.Fprintf(w, "   runtime context, dshmem:recent (re-sent only when it changes): %s\n", oneLine(sc.Dynamic, 90))
	}
	fmt.Fprintf(w, "   tools offered to the model: memory_search, memory_remember, memory_forget\n")
	return nil
}

// userSays ingests one user message of session at time t.
func userSays(ctx context.Context, eng *observer.Engine, session, cwd string, t time.Time, text string) error {
	data, err := payload.Marshal(payload.UserMessage{Text: text})
	if err != nil {
		return err
	}
	line, err := events.Marshal(&events.Envelope{ID: "demo:" + session + ":" + t.Format("150405"), Type: events.TypeUserMessage,
		Time: t.Format(time.RFC3339), Session: session, Cwd: cwd, Data: data})
	if err != nil {
		return err
	}
	res, outs, err := eng.Ingest(ctx, [][]byte{line})
	if err != nil {
		return err
	}
	if res.Appended != 1 && len(outs) == 1 && outs[0].Error != nil {
		return outs[0].Error
	}
	return nil
}

func narrateCheckpoint(w io.Writer, results []checkpoint.Result) {
	for _, r := range results {
		if len(r.Ops) == 0 {
			continue
		}
		fmt.Fprintf(w, "   checkpoint of session %s (seq %d–%d, %s): ", r.Session, r.From, r.To, r.Distiller)
		var parts []string
		for i, op := range r.Ops {
			id := ""
			if i < len(r.Entries) {
				id = r.Entries[i]
			}
			switch op.Op {
			case payload.OpSupersede:
				parts = append(parts, fmt.Sprintf("supersede %s → %s, quoting %q", op.TargetID, id, op.NewQuote))
			default:
				parts = append(parts, fmt.Sprintf("%s %s %q", op.Op, id, oneLine(op.Title, 60)))
			}
		}
		fmt.Fprintln(w, strings.Join(parts, "; "))
	}
}

// search is 'dshmem search --limit 3 QUERY': observed messages of
// every stream, ranked by recall with no score floor.
func search(ctx context.Context, eng *observer.Engine, q string) ([]recall.Item, error) {
	res, err := eng.Recall(ctx, recall.Query{Text: q, Kind: recall.KindEpisodic, Limit: 3, Bytes: -1, NoFloor: true})
	if err != nil {
		return nil, err
	}
	return res.Items, nil
}

// oneLine flattens whitespace and cuts s to at most n runes, marking a
// cut with "…".
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if c := distill.TruncateRunes(s, n); c != s {
		return c + "…"
	}
	return s
}
