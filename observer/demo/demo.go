package demo

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"dshmem/events"
	"dshmem/markdown"
	"dshmem/observer"
	"dshmem/replay"
	"dshmem/sqlstore"
)

//go:embed data/sample.jsonl
var sample []byte

// host holds DSH host session logs (MIT, see data/dsh/LICENSE): one
// written by a live host (zstd-framed), two from the host's tests.
//
//go:embed data/dsh
var host embed.FS

// Run walks through the demo in root, which must be a new or empty
// directory, writing the narration to w. It leaves root as the last step
// left it, for the caller to keep or remove.
func Run(ctx context.Context, w io.Writer, root string) error {
	step := 0
	say := func(format string, a ...any) {
		step++
		fmt.Fprintf(w, "\n%d. %s\n", step, fmt.Sprintf(format, a...))
	}
	fmt.Fprintf(w, "dshmem demo — a fresh root at %s\n", root)

	// 1. Ingest.
	say("Ingest the sample: %d JSONL lines from two agent sessions in two workspaces.", bytes.Count(sample, []byte("\n")))
	eng, err := observer.Open(ctx, root, observer.Options{})
	if err != nil {
		return err
	}
	defer func() {
		if eng != nil {
			eng.Close()
		}
	}()
	res, outcomes, err := eng.IngestReader(ctx, bytes.NewReader(sample))
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
	res, _, err = eng.IngestReader(ctx, bytes.NewReader(sample))
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
			from := len(markdown.CutUTF8(line, max(0, i-40)))
			fmt.Fprintf(w, "   …%s\n", oneLine(line[from:], 100))
		}
	}

	// 4. Search.
	say("Search the episodic record. Chinese is indexed as bigrams, code identifiers by their parts.")
	for _, q := range []string{"记忆", "parseConfig", "pnpm"} {
		hits, err := search(ctx, eng, q)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "   %q → %d hit(s)\n", q, len(hits))
		for _, h := range hits {
			fmt.Fprintf(w, "      %s [%s] %s\n", h.EventID, h.Type, oneLine(h.Text, 90))
		}
	}
	if err := hostAndMemory(ctx, w, say, eng, root); err != nil {
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
		fmt.Fprintf(w, "   on open: repaired %s\n", r)
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
		os.Remove(filepath.Join(root, sqlstore.IndexFile+s))
	}
	eng, err = observer.Open(ctx, root, observer.Options{})
	if err != nil {
		return err
	}
	hits, err := search(ctx, eng, "记忆")
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
	return nil
}
