package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"dshmem/events"
	"dshmem/observer"
	"dshmem/observer/scrub"
)

func init() {
	register(&command{
		name:    "verify",
		summary: "check every log segment; exit 1 on any problem",
		usage: `verify [--json]

Reads every segment of every stream and checks each zstd frame's checksum,
the batch headers (first seq, count, length, checksum), the hash chain
between batches, that seqs are contiguous and that every line is a valid
envelope. Seqs in batches 'dshmem scrub' rewrote are listed: their new
bytes and their place in the chain are checked, their first bytes are
gone by design. Each problem is printed with its segment and byte offset.
Exits 1 when anything is wrong; a torn tail (crash mid-write) can be fixed
with 'dshmem repair'. Anything else is damage: the stream is quarantined
(read-only; every other stream works as usual) and 'dshmem salvage
STREAM' keeps every whole batch of it, reporting the seqs lost. Seqs a
salvage lost are listed.

It changes one thing only: a damaged stream's quarantine is recorded
(log/STREAM/quarantine.json), so that every later open of the root
refuses writes to the stream until the salvage. It takes no lock and
runs beside a live 'dshmem serve', which finds damage by its own walk
at start; one started before the damage came goes on writing to the
stream until it is started again (verify says so). Each segment is read
as far as it was written when verify reached it; while a process holds
the root, an incomplete last batch of a stream is the one it is
writing, and is noted, not counted.
`,
		run: runVerify,
	})
	register(&command{
		name:    "repair",
		summary: "cut a torn tail left by a crash (nothing else)",
		usage: `repair

Fixes only a torn last batch of a stream's active segment — what a crash
mid-write leaves. The segment is first copied to <name>.broken, then cut
to its last whole batch and fsynced. Corruption anywhere else is refused:
run 'dshmem verify' to see it. Opening a root for writing does the same
repair on its own.
`,
		run: runRepair,
	})
}

// logDir is the root's log directory, which must exist.
func logDir(env *cliEnv) (string, error) {
	if err := requireRoot(env); err != nil {
		return "", err
	}
	dir := filepath.Join(env.root, observer.LogDir)
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("no log at %s: %s holds no events yet (is --root the right directory?)", dir, env.root)
	}
	return dir, nil
}

// verifyReport is what `dshmem verify --json` prints.
type verifyReport struct {
	OK          bool                   `json:"ok"`
	Streams     int                    `json:"streams"`
	Segments    int                    `json:"segments"`
	Events      uint64                 `json:"events"`
	Problems    []events.Problem       `json:"problems"`
	Quarantined []string               `json:"quarantined"` // damaged streams, quarantined (recorded now or by an earlier run)
	Lost        []events.ScrubbedRange `json:"lost"`        // seqs a salvage could not keep
	Scrubbed    []events.ScrubbedRange `json:"scrubbed"`    // seqs in batches 'dshmem scrub' rewrote
	Notes       []string               `json:"notes"`
}

func runVerify(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["verify"]
	fs := newFlags(c)
	asJSON := fs.Bool("json", false, "print the report as JSON (exit 1 all the same when anything is wrong)")
	if err := env.parseNoArgs(c, fs, args); err != nil {
		return err
	}
	dir, err := logDir(env)
	if err != nil {
		return err
	}
	all, checked, err := events.VerifyCounted(dir)
	if err != nil {
		return fmt.Errorf("verify %s: %w", dir, err)
	}
	rep := verifyReport{Streams: checked.Streams, Segments: checked.Segments, Events: checked.Events,
		Problems: []events.Problem{}, Quarantined: []string{}, Lost: append([]events.ScrubbedRange{}, checked.Lost...),
		Scrubbed: append([]events.ScrubbedRange{}, checked.Scrubbed...), Notes: []string{}}
	note := func(format string, a ...any) {
		msg := fmt.Sprintf(format, a...)
		rep.Notes = append(rep.Notes, msg)
		if !*asJSON {
			fmt.Fprintf(env.stderr, "dshmem verify: %s\n", msg)
		}
	}
	pid := 0
	for _, p := range all {
		// A writer that holds the root cut any torn tail off when it
		// opened it: an incomplete last batch now is the one it writes.
		if p.Repairable && pid == 0 {
			pid = observer.HolderPID(env.root)
		}
		if p.Repairable && pid != 0 {
			note("%s ends in a batch that process %d, which holds the root, was writing (not a problem)", p.Segment, pid)
			continue
		}
		rep.Problems = append(rep.Problems, p)
		if !*asJSON {
			fmt.Fprintln(env.stdout, p)
		}
	}
	tried := map[string]bool{} // a stream's first damage is the one recorded
	for _, p := range rep.Problems {
		if p.Repairable || tried[p.Stream] {
			continue
		}
		tried[p.Stream] = true
		// Recorded, so that every later open refuses writes to it.
		if _, err := events.RecordQuarantine(dir, p); errors.Is(err, events.ErrDamageNotConfirmed) {
			note("stream %s: a second read did not meet the damage again (a scrub or salvage beside verify may have replaced the segment): not quarantined; run 'dshmem verify' again", p.Stream)
			continue
		} else if err != nil {
			note("stream %s is damaged, and its quarantine could not be recorded: %v", p.Stream, err)
			continue
		}
		rep.Quarantined = append(rep.Quarantined, p.Stream)
		note("stream %s is damaged: it is quarantined (read-only, the other streams unaffected); 'dshmem salvage %s' keeps every whole batch and reports the seqs lost", p.Stream, p.Stream)
		if pid == 0 {
			pid = observer.HolderPID(env.root)
		}
		if pid != 0 {
			note("process %d holds the root and writes to %s until it opens the root again: restart it ('dshmem serve') and it refuses them", pid, p.Stream)
		}
	}
	rep.OK = len(rep.Problems) == 0
	scrubNote := ""
	if _, err := os.Stat(filepath.Join(env.root, scrub.JournalFile)); err == nil && rep.OK {
		scrubNote = fmt.Sprintf("a scrub was interrupted (%s is there); run 'dshmem scrub' to finish it", scrub.JournalFile)
	}
	if *asJSON {
		if scrubNote != "" {
			rep.Notes = append(rep.Notes, scrubNote)
		}
		if err := printJSON(env, rep); err != nil {
			return err
		}
		if !rep.OK {
			return exitError{1}
		}
		return nil
	}
	if !rep.OK {
		fmt.Fprintf(env.stderr, "dshmem verify: %d problem(s) in %s\n", len(rep.Problems), dir)
		return exitError{1}
	}
	fmt.Fprintf(env.stdout, "ok: %d stream(s), %d segment(s), %d event(s) verified\n", checked.Streams, checked.Segments, checked.Events)
	for _, r := range checked.Lost {
		fmt.Fprintf(env.stdout, "stream %s: seqs %d..%d lost to damage ('dshmem salvage' kept every whole batch around them)\n", r.Stream, r.First, r.Last)
	}
	for _, r := range checked.Scrubbed {
		fmt.Fprintf(env.stdout, "%s ('dshmem scrub' rewrote them; their place in the hash chain is checked, their first bytes are gone)\n", r)
	}
	if scrubNote != "" {
		fmt.Fprintf(env.stderr, "dshmem verify: %s\n", scrubNote)
	}
	return nil
}

func runRepair(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["repair"]
	if err := env.parseNoArgs(c, newFlags(c), args); err != nil {
		return err
	}
	dir, err := logDir(env)
	if err != nil {
		return err
	}
	if pid := observer.HolderPID(env.root); pid != 0 {
		return fmt.Errorf("%s is held by process %d; it repaired any torn tail when it opened the root", env.root, pid)
	}
	repaired, err := events.Repair(dir)
	if err != nil {
		return err // it names the log
	}
	if len(repaired) == 0 {
		fmt.Fprintln(env.stdout, "nothing to repair")
		return nil
	}
	for _, r := range repaired {
		fmt.Fprintf(env.stdout, "repaired: %s\n", r)
	}
	return nil
}
