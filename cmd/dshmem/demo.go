package main

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"dshmem/events"
	"dshmem/markdown"
	"dshmem/observer"
	"dshmem/replay"
	"dshmem/sqlstore/recall"
)

//go:embed demodata/sample.jsonl
var demoSample []byte

// demoHost holds DSH host session logs (MIT, see demodata/dsh/LICENSE):
// one written by a live host (zstd-framed), two from the host's tests.
//
//go:embed demodata/dsh
var demoHost embed.FS

func init() {
	register(&command{
		name:    "demo",
		summary: "run dshmem's main job on bundled sample data and narrate it",
		usage: `demo [--keep]

Creates a fresh temporary root and walks through what dshmem does with
the bundled sample conversation (English and Chinese, two workspaces):
ingest with validation and secret redaction, idempotent re-ingest,
search, verification of the log, recovery from a torn tail left by a
crash, rebuilding the index from the log alone, the Markdown files it
writes, and recovering a day file damaged the way the incident that
started dshmem did (cut to its first 16 lines). --root is not used.
With --keep the root is left on disk for you to explore.
`,
		run: runDemo,
	})
}

func runDemo(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["demo"]
	fs := newFlags(c)
	keep := fs.Bool("keep", false, "keep the temporary root afterwards")
	if err := env.parseNoArgs(c, fs, args); err != nil {
		return err
	}
	root, err := os.MkdirTemp("", "dshmem-demo-")
	if err != nil {
		return err
	}
	if !*keep {
		defer os.RemoveAll(root)
	}
	w := env.stdout
	step := 0
	say := func(format string, a ...any) {
		step++
		fmt.Fprintf(w, "\n%d. %s\n", step, fmt.Sprintf(format, a...))
	}
	fmt.Fprintf(w, "dshmem demo — a fresh root at %s\n", root)

	// 1. Ingest.
	say("Ingest the sample: %d JSONL lines from two agent sessions in two workspaces.", bytes.Count(demoSample, []byte("\n")))
	eng, err := observer.Open(ctx, root, observer.Options{})
	if err != nil {
		return err
	}
	defer func() {
		if eng != nil {
			eng.Close()
		}
	}()
	res, outcomes, err := eng.IngestReader(ctx, bytes.NewReader(demoSample))
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   appended %d, duplicates %d, rejected %d\n", res.Appended, res.Duplicates, res.Rejected)
	for _, o := range outcomes {
		if o.Error != nil {
			fmt.Fprintf(w, "   rejected, as it should be: %v\n", o.Error)
		}
	}
	streams := eng.Log().Streams()
	fmt.Fprintf(w, "   streams (one per workspace, plus global): %s\n", strings.Join(streams, ", "))

	// 2. Idempotence.
	say("Ingest the same file again: every id is already in its stream.")
	res, _, err = eng.IngestReader(ctx, bytes.NewReader(demoSample))
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   appended %d, duplicates %d, rejected %d\n", res.Appended, res.Duplicates, res.Rejected)

	// 3. Redaction.
	say("Secrets never reach the disk: the sample held an API key and a database password.")
	raw, err := decompressedLog(filepath.Join(root, observer.LogDir))
	if err != nil {
		return err
	}
	for _, secret := range []string{"sk-proj-8fK2mQ9xLr4TzW1vB7nC3dE5gH6jP0sA", "Xk9fLq2w"} {
		fmt.Fprintf(w, "   %q in the decompressed log: %v\n", secret, bytes.Contains(raw, []byte(secret)))
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if i := strings.Index(line, "[REDACTED:"); i >= 0 {
			from := max(0, i-40)
			for from > 0 && !utf8.RuneStart(line[from]) {
				from--
			}
			fmt.Fprintf(w, "   …%s\n", oneLine(line[from:], 100))
		}
	}

	// 4. Search.
	say("Search the episodic record. Chinese is indexed as bigrams, code identifiers by their parts.")
	for _, q := range []string{"记忆", "parseConfig", "pnpm"} {
		hits, err := demoSearch(ctx, eng, q)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "   %q → %d hit(s)\n", q, len(hits))
		for _, h := range hits {
			fmt.Fprintf(w, "      %s [%s] %s\n", h.EventID, h.Type, oneLine(h.Text, 90))
		}
	}
	if err := demoHostAndMemory(ctx, w, say, eng, root); err != nil {
		return err
	}
	if err := eng.Close(); err != nil {
		return err
	}
	eng = nil

	// 5. Verify.
	say("Verify the log: checksums, batch headers, the hash chain, contiguous seqs.")
	problems, err := events.Verify(filepath.Join(root, observer.LogDir))
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   problems: %d\n", len(problems))

	// 6. Crash.
	say("Simulate a crash mid-write: a last batch whose bytes only half reached the disk.")
	eng, err = observer.Open(ctx, root, observer.Options{})
	if err != nil {
		return err
	}
	late := `{"id":"demo:crash:1","type":"user/message","time":"2026-08-19T14:03:00Z","data":{"text":"this batch is torn by the simulated crash"}}`
	if _, _, err := eng.IngestReader(ctx, strings.NewReader(late)); err != nil {
		return err
	}
	if err := eng.Close(); err != nil {
		return err
	}
	eng = nil
	seg, err := lastSegment(filepath.Join(root, observer.LogDir, "global"))
	if err != nil {
		return err
	}
	cut, err := tearLastBatch(seg)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   cut %s to %d bytes, in the middle of its last batch\n", filepath.Base(seg), cut)
	problems, _ = events.Verify(filepath.Join(root, observer.LogDir))
	for _, p := range problems {
		fmt.Fprintf(w, "   verify: %s offset %d: %s\n", filepath.Base(p.Segment), p.Offset, p.Msg)
	}
	eng, err = observer.Open(ctx, root, observer.Options{})
	if err != nil {
		return err
	}
	for _, r := range eng.Repairs() {
		fmt.Fprintf(w, "   on open: repaired %s\n", describeRepair(r))
	}
	if why := eng.Rebuilt(); why != "" {
		fmt.Fprintf(w, "   on open: the %s, so the index was rebuilt from the log\n", why)
	}
	if err := eng.Close(); err != nil {
		return err
	}
	eng = nil
	problems, _ = events.Verify(filepath.Join(root, observer.LogDir))
	fmt.Fprintf(w, "   problems after repair: %d (the torn bytes are kept in the .broken copy)\n", len(problems))

	// 7. Rebuild.
	say("Delete index.db and open again: the index is rebuilt from the log alone.")
	for _, s := range []string{"", "-wal", "-shm"} {
		os.Remove(filepath.Join(root, observer.IndexFile+s))
	}
	eng, err = observer.Open(ctx, root, observer.Options{})
	if err != nil {
		return err
	}
	hits, err := demoSearch(ctx, eng, "记忆")
	if err != nil {
		return err
	}
	st, err := eng.Store().Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   rebuilt: %d events, %d sessions, %d entries; \"记忆\" → %d hit(s) again\n", st.Events, st.Sessions, st.Entries, len(hits))

	// 8. Files.
	say("The Markdown files: folds of the log, written atomically, each recorded with its sha256.")
	files, err := replay.ProjectionFiles(root)
	if err != nil {
		return err
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "   %-72s %5d bytes\n", f, len(b))
	}
	const dayFile = "sessions/2026-08-18.md"
	dayPath := filepath.Join(root, filepath.FromSlash(dayFile))
	orig, err := os.ReadFile(dayPath)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   %s holds %d compaction summaries in event order, one block per compactionId.\n", dayFile, bytes.Count(orig, []byte("<!-- compaction:")))

	// 9. The incident.
	say("Damage %s the way the incident did: overwrite it with its first 16 lines.", dayFile)
	lines := strings.SplitAfter(string(orig), "\n")
	if err := os.WriteFile(dayPath, []byte(strings.Join(lines[:min(16, len(lines))], "")), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(w, "   %d lines → 16 lines; %d compaction blocks left\n", len(lines)-1, strings.Count(strings.Join(lines[:16], ""), "<!-- compaction:"))
	rep, err := replay.Verify(ctx, eng.Log(), root, eng.Store(), replay.VerifyOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   dshmem replay --verify rebuilds everything aside from the log and compares, byte for byte:\n")
	for _, d := range rep.Differences {
		fmt.Fprintf(w, "      %s: %s\n", d.Path, d.Problem)
	}

	// 10. Restore.
	say("dshmem restore %s --out %s: the file as the log says it is.", dayFile, dayFile)
	data, err := replay.Restore(ctx, eng.Log(), dayFile, replay.Point{}, replay.RestoreOptions{Index: eng.Store()})
	if err != nil {
		return err
	}
	if err := markdown.WriteFileAtomic(dayPath, data, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(w, "   restored %d bytes; identical to the file before the damage: %v\n", len(data), bytes.Equal(data, orig))
	rep, err = replay.Verify(ctx, eng.Log(), root, eng.Store(), replay.VerifyOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   replay --verify: %d of %d files differ\n", len(rep.Differences), rep.Files)

	fmt.Fprintln(w)
	if *keep {
		fmt.Fprintf(w, "The root is kept at %s. Try:\n  dshmem --root %s stats\n  dshmem --root %s search 注入\n  dshmem --root %s replay --verify\n  dshmem --root %s restore sessions/2026-08-18.md --at 2026-08-18T11:00:00+08:00\n  zstd -dc %s/log/*/*.jsonl.zst | head\n", root, root, root, root, root, root)
	} else {
		fmt.Fprintln(w, "Done; the temporary root was removed (run 'dshmem demo --keep' to explore it).")
	}
	return nil
}

// decompressedLog returns every event line of every segment below dir.
func decompressedLog(dir string) ([]byte, error) {
	var out bytes.Buffer
	segs, err := filepath.Glob(filepath.Join(dir, "*", "*.jsonl.zst"))
	if err != nil {
		return nil, err
	}
	for _, s := range segs {
		f, err := os.Open(s)
		if err != nil {
			return nil, err
		}
		r := events.NewReader(f)
		for {
			b, err := r.Next()
			if err != nil {
				break
			}
			for _, e := range b.Events {
				line, _ := events.Marshal(&e)
				out.Write(line)
				out.WriteByte('\n')
			}
		}
		f.Close()
	}
	return out.Bytes(), nil
}

func lastSegment(dir string) (string, error) {
	segs, err := filepath.Glob(filepath.Join(dir, "*.jsonl.zst"))
	if err != nil || len(segs) == 0 {
		return "", fmt.Errorf("no segment in %s", dir)
	}
	return segs[len(segs)-1], nil
}

// tearLastBatch truncates seg in the middle of its last batch, as a
// crash between write and fsync can leave it, and returns the new size.
func tearLastBatch(seg string) (int64, error) {
	f, err := os.Open(seg)
	if err != nil {
		return 0, err
	}
	var last events.Batch
	r := events.NewReader(f)
	for {
		b, err := r.Next()
		if err != nil {
			break
		}
		last = b
	}
	f.Close()
	if last.End == 0 {
		return 0, fmt.Errorf("no batch in %s", seg)
	}
	cut := last.Offset + (last.End-last.Offset)/2
	return cut, os.Truncate(seg, cut)
}

// demoHostAndMemory imports the bundled DSH host logs, distils memory
// from the conversation with the offline rules distiller, corrects a
// fact and recalls it.
func demoHostAndMemory(ctx context.Context, w io.Writer, say func(string, ...any), eng *observer.Engine, root string) error {
	say("Import DSH host session logs (one written by a live host, zstd-framed; two from its tests).")
	hostDir := filepath.Join(root, "dsh-host-sessions")
	sub, err := fs.Sub(demoHost, "demodata/dsh")
	if err != nil {
		return err
	}
	if err := os.CopyFS(hostDir, sub); err != nil {
		return fmt.Errorf("unpack the bundled host logs: %w", err)
	}
	rep, err := eng.ImportDSH(ctx, hostDir, observer.ImportOptions{})
	if err != nil {
		return err
	}
	for _, f := range rep.Files {
		rel, _ := filepath.Rel(hostDir, f.Path)
		fmt.Fprintf(w, "   %s: %d events, %d appended\n", oneLine(rel, 70), f.Events, f.Appended)
	}
	fmt.Fprintf(w, "   host rows skipped as not memory (turn/step markers, chunks, …): %d\n", sumCounts(rep.Total.Skipped))
	typed, injected, err := eng.Store().UserMessageCounts(ctx, "dsh:")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   user messages: %d typed by a person, %d injected by plugins (kept as context, never learnt from)\n", typed, injected)
	rep, err = eng.ImportDSH(ctx, hostDir, observer.ImportOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   importing again: %d appended, %d duplicates\n", rep.Total.Appended, rep.Total.Duplicates)

	say("Distil: a checkpoint runs the offline rules distiller over what users typed.")
	at := time.Date(2026, 8, 20, 9, 0, 0, 0, time.UTC)
	if err := demoSay(ctx, eng, "demo-s3", "/home/dev/shop-api", at,
		"Remember that the shop database is MySQL 8 on db.internal."); err != nil {
		return err
	}
	results, err := eng.Checkpoint(ctx, observer.CheckpointRequest{Force: true, Now: at.Add(time.Minute)})
	if err != nil {
		return err
	}
	demoCheckpoint(w, results)

	say("The user corrects a fact: the old entry is superseded with the user's own words as evidence.")
	if err := demoSay(ctx, eng, "demo-s3", "/home/dev/shop-api", at.Add(2*time.Minute),
		"Correction: the shop database is not MySQL but PostgreSQL 16 now."); err != nil {
		return err
	}
	results, err = eng.Checkpoint(ctx, observer.CheckpointRequest{Force: true, Now: at.Add(3 * time.Minute)})
	if err != nil {
		return err
	}
	demoCheckpoint(w, results)

	say("Recall: entries of the workspace and global scope, ranked; superseded facts never come back.")
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
	sc, err := eng.SessionContext(ctx, observer.ContextRequest{Cwd: "/home/dev/shop-api", Now: at.Add(5 * time.Minute)})
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

// demoSay ingests one user message of session at time t.
func demoSay(ctx context.Context, eng *observer.Engine, session, cwd string, t time.Time, text string) error {
	line, err := json.Marshal(map[string]any{
		"id": "demo:" + session + ":" + t.Format("150405"), "type": "user/message", "time": t.Format(time.RFC3339),
		"session": session, "cwd": cwd, "data": map[string]string{"text": text},
	})
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

func demoCheckpoint(w io.Writer, results []observer.CheckpointResult) {
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
			case "supersede":
				parts = append(parts, fmt.Sprintf("supersede %s → %s, quoting %q", op.TargetID, id, op.NewQuote))
			default:
				parts = append(parts, fmt.Sprintf("%s %s %q", op.Op, id, oneLine(op.Title, 60)))
			}
		}
		fmt.Fprintln(w, strings.Join(parts, "; "))
	}
}

// demoSearch is 'dshmem search --limit 3 QUERY': observed messages of
// every stream, ranked by recall with no score floor.
func demoSearch(ctx context.Context, eng *observer.Engine, q string) ([]recall.Item, error) {
	res, err := eng.Recall(ctx, recall.Query{Text: q, Kind: recall.KindEpisodic, Limit: 3, Bytes: -1, NoFloor: true})
	if err != nil {
		return nil, err
	}
	return res.Items, nil
}
