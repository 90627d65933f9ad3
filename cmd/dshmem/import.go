package main

import (
	"context"
	"dshmem/observer/importer"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func init() {
	register(&command{
		name:    "import",
		summary: "import DSH session logs or a legacy memory tree",
		usage: `import dsh|legacy PATH [--json] [--batch N]

dsh PATH     DSH host session logs: one file (session.jsonl or
             session.jsonl.zstd) or a whole tree such as ~/.dsh/sessions
             (the highest generation file of each session directory).
             Event ids are dsh:<session id>:<seq>, so importing the same
             logs again appends nothing. Text a plugin injected is kept
             as context, never as something the user said. A torn last
             frame is left out and reported; the whole frames before it
             are imported. Unknown host event types are counted.
legacy PATH  a dsh-memory Markdown tree (global.md, index.md,
             knowledge/, projects/, tools/, sessions/YYYY-MM-DD.md) or a
             dsh-workspace-memory tree (global/ and scopes/ws-*/ with
             memory_entries.json), or a directory holding both. Facts and
             entries become memory/remember events (superseded and
             forgotten entries are remembered, then forgotten), session
             days become compaction/summary events; ids derive from the
             file and the entry, so importing again appends nothing.

Prints one line per file (events, appended, duplicates, rejected,
skipped and unknown counts, torn bytes, notes) and a summary line; --json
prints the whole report as JSON instead. Exits 0 when anything could be
read, 1 when nothing could (a missing path, no recognisable file, every
file unreadable) or the log refused a write.
`,
		run: runImport,
	})
}

func runImport(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["import"]
	fs := newFlags(c)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	batch := fs.Int("batch", importer.DefaultImportBatch, "events per intake call (one fsync each)")
	pos, err := env.parseFlags(c, fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError{"say what to import: dsh or legacy"}
	}
	kind := pos[0]
	if kind != "dsh" && kind != "legacy" {
		return usageError{fmt.Sprintf("unknown kind %q; want dsh or legacy", kind)}
	}
	if len(pos) != 2 {
		return usageError{fmt.Sprintf("import %s takes exactly one PATH", kind)}
	}
	if *batch < 1 {
		return usageError{"--batch must be at least 1"}
	}
	path := pos[1]
	if _, err := os.Stat(path); err != nil {
		what := "a DSH sessions directory (e.g. ~/.dsh/sessions) or one session log"
		if kind == "legacy" {
			what = "the root of a dsh-memory or dsh-workspace-memory tree"
		}
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s does not exist; pass %s", path, what)
		}
		return fmt.Errorf("cannot read %s: %w", path, err)
	}

	eng, err := openEngine(ctx, env)
	if err != nil {
		return err
	}
	defer eng.Close()
	progress, events, done := importProgress(env, path)
	opts := importer.Options{Batch: *batch, Progress: progress, Events: events}
	var rep importer.Report
	if kind == "dsh" {
		rep, err = importer.ImportDSH(ctx, eng, path, opts)
	} else {
		rep, err = importer.ImportLegacy(ctx, eng, path, opts)
	}
	done()
	if *asJSON {
		b, jerr := json.MarshalIndent(rep, "", "  ")
		if jerr != nil {
			return fmt.Errorf("encode report: %w", jerr)
		}
		fmt.Fprintln(env.stdout, string(b))
	} else if !errors.Is(err, importer.ErrNothingToImport) { // the error says it all
		printImportReport(env.stdout, &rep)
	}
	if err != nil {
		return fmt.Errorf("import %s %s: %w", kind, path, err)
	}
	if cerr := eng.Close(); cerr != nil {
		return fmt.Errorf("close root: %w", cerr)
	}
	return nil
}

// importProgress shows, on a terminal only, the events imported, their
// rate, the bytes of the source files done (a file counts once it is
// done) of the bytes under path, and the time left at that pace.
func importProgress(env *cliEnv, path string) (progress func(n, total int, path string), events func(int), done func()) {
	var total int64
	filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	m := newMeter(env, "import:", total)
	if m == nil {
		return nil, nil, func() {}
	}
	var current string
	return func(n, total int, path string) {
			if current != "" {
				if info, err := os.Stat(current); err == nil {
					m.add(0, info.Size())
				}
			}
			current = path
		}, func(n int) { m.add(int64(n), 0) },
		m.done
}

func printImportReport(w io.Writer, rep *importer.Report) {
	if len(rep.Layouts) > 0 {
		fmt.Fprintf(w, "layouts: %s\n", strings.Join(rep.Layouts, ", "))
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for i := range rep.Files {
		f := &rep.Files[i]
		if f.Error != "" {
			fmt.Fprintf(w, "%s: unreadable: %s\n", f.Path, f.Error)
			continue
		}
		var b strings.Builder
		b.WriteString(f.Path)
		if f.Session != "" {
			fmt.Fprintf(&b, " (session %s)", f.Session)
		}
		if len(f.Streams) > 0 {
			fmt.Fprintf(&b, " → %s", strings.Join(f.Streams, ","))
		}
		fmt.Fprintf(&b, ": %d events, %d appended, %d duplicates", f.Events, f.Appended, f.Duplicates)
		if f.Rejected > 0 {
			fmt.Fprintf(&b, ", %d rejected", f.Rejected)
		}
		writeCounts(&b, "skipped", f.Skipped)
		writeCounts(&b, "unknown", f.Unknown)
		writeCounts(&b, "malformed", f.Malformed)
		if f.TornBytes > 0 {
			fmt.Fprintf(&b, "; torn tail: %d bytes left unread", f.TornBytes)
			if f.TailReason != "" {
				fmt.Fprintf(&b, " (%s)", f.TailReason)
			}
		}
		fmt.Fprintln(w, b.String())
		for _, n := range f.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
		for _, r := range f.Rejections {
			fmt.Fprintf(w, "  rejected: %s\n", r)
		}
	}
	t := rep.Total
	var b strings.Builder
	fmt.Fprintf(&b, "imported %d files (%d unreadable): %d events, %d appended, %d duplicates, %d rejected",
		t.Files, t.Failed, t.Events, t.Appended, t.Duplicates, t.Rejected)
	fmt.Fprintf(&b, "; skipped %d, unknown %d", sumCounts(t.Skipped), sumCounts(t.Unknown))
	if m := sumCounts(t.Malformed); m > 0 {
		fmt.Fprintf(&b, ", malformed %d", m)
	}
	fmt.Fprintf(&b, "; torn %d bytes", t.TornBytes)
	fmt.Fprintln(w, b.String())
}

// writeCounts appends "; name N (k=v …)" with keys sorted, or nothing.
func writeCounts(b *strings.Builder, name string, m map[string]int) {
	if len(m) == 0 {
		return
	}
	fmt.Fprintf(b, "; %s %d (%s)", name, sumCounts(m), countsText(m))
}

// countsText prints counts by name as "k=v k=v", keys sorted.
func countsText[V int | uint64](m map[string]V) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
