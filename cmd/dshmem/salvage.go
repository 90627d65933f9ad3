package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"dshmem/events"
	"dshmem/observer"
)

func init() {
	register(&command{
		name:    "salvage",
		summary: "take a damaged stream out of quarantine, keeping every whole batch",
		usage: `salvage [--dry-run] [--json] STREAM

A stream whose log is damaged (a flipped byte, a bad frame, batch
header, seq, hash chain or seal: what 'dshmem verify' reports with its
segment and offset) is QUARANTINED: every other stream reads and
writes as usual; the damaged one is read-only, its log read up to the
damage, and it is marked in 'dshmem stats', in /v1/healthz and in every
answer that includes it. salvage takes it out of quarantine:

  1. every segment of STREAM is read byte by byte, and every whole
     batch whose frame matches its checksum is kept — before and after
     the damage — byte for byte, in a new chain of segments, read back
     and verified before anything else changes;
  2. seqs no whole batch holds are lost: a gap record in the new chain
     says which (so the hash chain and the seqs stay continuous, and
     the lost seqs are never given to other events); the report lists
     them exactly;
  3. the damaged segments are moved, whole, into
     <root>/quarantine/STREAM.<time>/damaged/ (never deleted; a journal
     beside them), and the new ones put in their place;
  4. index.db and every projection are rebuilt from the log, so
     'dshmem replay --verify' agrees.

A crash (or kill -9) at any step leaves a root that the next writer,
or 'dshmem salvage' again, finishes. A stream with no damage is left as
it is. --dry-run says what would be kept and lost and changes nothing
(it runs beside a server too). salvage needs the root to itself: stop
'dshmem serve' first (it refuses, naming the server's pid).

--json prints {stream, dryRun, damage, batches, events, lost:[{first,
last}], lostEvents, last, movedTo, segments}.

Examples:
  dshmem verify                      # names the segment and offset of the damage
  dshmem salvage --dry-run global
  dshmem salvage ws-3f1a2b4c5d6e7f809a1b
`,
		run: runSalvage,
	})
}

// salvagePauseEnv names a step at which `dshmem salvage` stops, for
// crash tests (as DSHMEM_TEST_SCRUB_PAUSE): "READY STEP" on stderr, then
// it blocks until killed.
const salvagePauseEnv = "DSHMEM_TEST_SALVAGE_PAUSE"

func runSalvage(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["salvage"]
	fs := newFlags(c)
	dryRun := fs.Bool("dry-run", false, "say what would be kept and lost; change nothing")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := env.parseFlags(c, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{fmt.Sprintf("takes one STREAM (as 'dshmem stats' lists them), got %d arguments", len(pos))}
	}
	stream := pos[0]
	if err := requireRoot(env); err != nil {
		return err
	}
	logDir := filepath.Join(env.root, observer.LogDir)
	// A salvage a crash interrupted may have moved the stream aside.
	interrupted, _ := filepath.Glob(filepath.Join(env.root, observer.QuarantineDir, stream+".*", "salvage.json"))
	if fi, err := os.Stat(filepath.Join(logDir, stream)); !events.ValidStream(stream) || (err != nil || !fi.IsDir()) && len(interrupted) == 0 {
		return fmt.Errorf("no stream %q in %s (streams: %s); 'dshmem stats' lists them and marks the quarantined ones", stream, logDir, streamList(logDir))
	}
	rep, err := observer.Salvage(ctx, env.root, stream, observer.SalvageOptions{DryRun: *dryRun, Step: stepPause(env, salvagePauseEnv)})
	var locked *observer.LockedError
	switch {
	case errors.Is(err, events.ErrNotDamaged):
		return fmt.Errorf("stream %s is not damaged: 'dshmem verify' finds nothing in it and it is not quarantined; nothing was changed", stream)
	case errors.As(err, &locked):
		who := "another process"
		if locked.PID > 0 {
			who = fmt.Sprintf("process %d", locked.PID)
		}
		return fmt.Errorf("%s holds the root (a 'dshmem serve'?): salvage needs the root to itself; stop it, run 'dshmem salvage %s', then start it again ('--dry-run' runs beside it); nothing was changed", who, stream)
	case err != nil:
		return fmt.Errorf("%w\nthe damaged segments are kept; run 'dshmem salvage %s' again to finish", err, stream)
	}
	if *asJSON {
		return printJSON(env, rep)
	}
	w := termSafe(env.stdout)
	verb := map[bool]string{false: "kept", true: "would keep"}[rep.DryRun]
	fmt.Fprintf(w, "stream %s: damage found:\n", rep.Stream)
	for _, d := range rep.Damage {
		fmt.Fprintf(w, "  %s\n", d)
	}
	fmt.Fprintf(w, "%s %d whole batches (%d events); the stream ends at seq %d\n", verb, rep.Batches, rep.Events, rep.Last)
	if len(rep.Lost) == 0 {
		fmt.Fprintln(w, "lost: nothing (the damage held no event)")
	} else {
		var rs []string
		for _, r := range rep.Lost {
			rs = append(rs, r.String())
		}
		fmt.Fprintf(w, "lost: %s, seqs %s\n", plural(int(rep.LostEvents), "event"), strings.Join(rs, ", "))
	}
	if rep.DryRun {
		fmt.Fprintln(w, "dry run: nothing was changed")
		return nil
	}
	fmt.Fprintf(w, "damaged segments moved to %s\nindex and projections rebuilt; the stream takes writes again\n", rep.MovedTo)
	return nil
}

// streamList names the streams of a log directory, for an error.
func streamList(logDir string) string {
	ents, _ := os.ReadDir(logDir)
	var names []string
	for _, e := range ents {
		if e.IsDir() && events.ValidStream(e.Name()) {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
