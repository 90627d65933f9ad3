package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"dshmem/observer/httpapi"
	"dshmem/observer/scrub"
)

func init() {
	register(&command{
		name:    "scrub",
		summary: "erase the text of forgotten entries from the log, the index and the files",
		usage: `scrub [--sources] [--dry-run] [--json]

'dshmem forget' hides an entry at once, but its words stay on disk: in
the log's sealed segments (the events that wrote it), in index.db and in
old summary versions. scrub erases them. Every text of every version of
every forgotten entry (content, title, description, terms) becomes
"[scrubbed]": whole in the entry's own events (the remember that made
it, the ops that made or revised it, the quote of an op that superseded
it), and wherever else it appears in its stream (a message, a hand
edit, a summary) when it is at least 6 characters long. The text of an
entry that is not forgotten is left as it is, even where it repeats a
forgotten one's words. Ids, seqs, types, ops and the hash chain stay as they are, so no
other entry changes status; 'dshmem history ID' shows "[scrubbed]".

With --sources, the events the entries were learnt from (their
provenance: the user's messages, the explicit remember) are blanked
whole too. Without it, a message keeps its words except the entry's.

The log is rewritten one segment at a time (new file, fsync, read back,
rename, fsync of the directory; the active segment is sealed first),
then index.db and every projection are rebuilt from it, index.db is
vacuumed, and the log verified. A crash at any point leaves a valid
root; running scrub again finishes the job (` + scrub.JournalFile + ` in
the root holds the plan until then). A projection with a hand edit not
yet synced is refused: run 'dshmem sync' first.

--dry-run says what would change and changes nothing. --json prints the
report as JSON: {dryRun, resumed, entries, sources, streams:[{stream,
segments, events, bytesBefore, bytesAfter, sealed}], segments, events,
bytesBefore, bytesAfter, indexBytesBefore, indexBytesAfter, files,
held, scrubbed}.

When 'dshmem serve' holds the root, the scrub runs inside it (POST
/v1/scrub): writes wait only while the rebuilt index is put in place.

Examples:
  dshmem forget m-3f1a9c2b7d10 && dshmem scrub --dry-run
  dshmem scrub --sources
  dshmem scrub --json | jq .events
`,
		run: runScrub,
	})
}

// scrubPauseEnv names a step at which `dshmem scrub` stops, for crash
// tests: "STEP" or "STEP:N" (the Nth time the step is reached) prints
// "READY STEP" on stderr and blocks until the process is killed.
const scrubPauseEnv = "DSHMEM_TEST_SCRUB_PAUSE"

func runScrub(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["scrub"]
	fs := newFlags(c)
	sources := fs.Bool("sources", false, "also blank the messages the forgotten entries were learnt from")
	dryRun := fs.Bool("dry-run", false, "say what would change; change nothing")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := env.parseNoArgs(c, fs, args); err != nil {
		return err
	}
	opts := scrub.Options{Sources: *sources, DryRun: *dryRun, Progress: scrubProgress(env), Step: scrubPause(env)}
	eng, err := openExisting(ctx, env)
	var rep scrub.Report
	if err != nil {
		// A scrub of a large root outlasts the default timeout; ctx still ends it.
		if err := onServer(ctx, env, err, "the server holding the root (pid %d, %s) runs the scrub; waiting for it", "/v1/scrub", httpapi.ScrubAPIRequest{Sources: *sources, DryRun: *dryRun}, &rep, &http.Client{}); err != nil {
			return err
		}
	} else {
		defer eng.Close()
		rep, err = scrub.Run(ctx, eng, opts)
		endScrubProgress(env)
		if errors.Is(err, scrub.ErrHandEdit) {
			return err
		}
		if err != nil {
			return fmt.Errorf("%w\nnothing is lost: run 'dshmem scrub' again to finish", err)
		}
		if err := eng.Close(); err != nil {
			return fmt.Errorf("close root: %w", err)
		}
	}
	if *asJSON {
		return printJSON(env, rep)
	}
	printScrubReport(env, rep)
	return nil
}

func printScrubReport(env *cliEnv, rep scrub.Report) {
	w := env.stdout
	if rep.Resumed {
		fmt.Fprintln(w, "finished the scrub a crash had interrupted")
	}
	if rep.Entries == 0 && rep.Events == 0 {
		fmt.Fprintln(w, "nothing to scrub: no entry is forgotten ('dshmem forget ID' first)")
		return
	}
	verb := "scrubbed"
	if rep.DryRun {
		verb = "would scrub"
	}
	src := ""
	if rep.Sources {
		src = " and the events they were learnt from"
	}
	fmt.Fprintf(w, "%s %s%s: %s in %s of %s\n",
		verb, plural(rep.Entries, "forgotten entry"), src, plural(rep.Events, "event"), plural(rep.Segments, "segment"), plural(len(rep.Streams), "stream"))
	for _, s := range rep.Streams {
		sealed := ""
		if s.Sealed {
			sealed = " (its active segment sealed first)"
		}
		if rep.DryRun {
			fmt.Fprintf(w, "  %s: %s in %s (%d bytes)\n", s.Stream, plural(s.Events, "event"), plural(s.Segments, "segment"), s.BytesBefore)
		} else {
			fmt.Fprintf(w, "  %s: %s in %s, %d → %d bytes%s\n", s.Stream, plural(s.Events, "event"), plural(s.Segments, "segment"), s.BytesBefore, s.BytesAfter, sealed)
		}
	}
	switch {
	case len(rep.Held) > 0 && rep.DryRun:
		fmt.Fprintf(w, "hand edits not synced, which a scrub refuses to overwrite ('dshmem sync' first): %s\n", strings.Join(rep.Held, ", "))
	case len(rep.Held) > 0:
		fmt.Fprintf(w, "hand edits made during the scrub, left as they are ('dshmem sync', then scrub again): %s\n", strings.Join(rep.Held, ", "))
	}
	if rep.DryRun {
		fmt.Fprintln(w, "nothing was changed (--dry-run)")
		return
	}
	fmt.Fprintf(w, "index.db rebuilt and vacuumed: %d → %d bytes; %d projection files rewritten\n", rep.IndexBytesBefore, rep.IndexBytesAfter, rep.Files)
	fmt.Fprintf(w, "log verified: %d seq ranges now in scrubbed batches\n", len(rep.Scrubbed))
}

// scrubProgress reports the phases of a scrub on a terminal.
func scrubProgress(env *cliEnv) func(phase string, done, total uint64) {
	if !isTerminal(env.stderr) {
		return nil
	}
	last := time.Time{}
	return func(phase string, done, total uint64) {
		if time.Since(last) < 200*time.Millisecond && done != total {
			return
		}
		last = time.Now()
		if total > 0 {
			fmt.Fprintf(env.stderr, "\rscrub: %s %d/%d   ", phase, done, total)
			return
		}
		fmt.Fprintf(env.stderr, "\rscrub: %s…            ", phase)
	}
}

func endScrubProgress(env *cliEnv) {
	if isTerminal(env.stderr) {
		fmt.Fprintln(env.stderr)
	}
}

// scrubPause is the crash tests' hook (scrubPauseEnv), nil without it.
func scrubPause(env *cliEnv) func(step string) { return stepPause(env, scrubPauseEnv) }

// stepPause reads a crash test's pause from the environment variable
// envName: "STEP" or "STEP:N" (the Nth time the step is reached) prints
// "READY STEP" on stderr and blocks until the process is killed.
func stepPause(env *cliEnv, envName string) func(step string) {
	want := os.Getenv(envName)
	if want == "" {
		return nil
	}
	name, nth := want, 1
	if i := strings.LastIndexByte(want, ':'); i > 0 {
		fmt.Sscanf(want[i+1:], "%d", &nth)
		name = want[:i]
	}
	seen := 0
	return func(step string) {
		if step != name {
			return
		}
		if seen++; seen == nth {
			fmt.Fprintf(env.stderr, "READY %s\n", want)
			for {
				time.Sleep(time.Hour) // until killed
			}
		}
	}
}
