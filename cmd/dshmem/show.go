package main

import (
	"context"
	"errors"
	"fmt"

	"dshmem/events/payload"
	"dshmem/observer"
)

func init() {
	register(&command{
		name:    "show",
		summary: "show a memory entry with its versions and the events it came from",
		usage: `show [--json] ID

Prints entry ID (m-…, as 'dshmem entries' lists them): its scope, type,
status, title and content; every version, oldest first, with the op and
the event that made it; and its provenance — the events it rests on (the
evidence a distiller quoted, then the event that wrote it), each with its
type, time, stream and seq and its text (redacted, cut to one line; the
JSON has it whole). An event the index no longer holds is marked so.

--json prints {entry, versions, provenance}. It reads the index only, so
it runs beside a live 'dshmem serve'.

Examples:
  dshmem show m-0123456789abcdef
  dshmem show --json m-0123456789abcdef | jq '.provenance[].text'
`,
		run: runShow,
	})
}

func runShow(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["show"]
	fs := newFlags(c)
	asJSON := fs.Bool("json", false, "print the entry, its versions and provenance as JSON")
	id, err := env.parseEntryID(c, fs, args)
	if err != nil {
		return err
	}
	eng, err := openReader(ctx, env)
	if err != nil {
		return err
	}
	defer eng.Close()
	d, err := eng.ShowEntry(ctx, id)
	if errors.Is(err, observer.ErrUnknownEntry) {
		return errNoEntry(env, id)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(env, d)
	}
	en := d.Entry
	w := env.stdout
	fmt.Fprintf(w, "%s  %s\n", en.ID, en.Title)
	fmt.Fprintf(w, "scope       %s\n", scopeNamed(eng, en.Scope))
	fmt.Fprintf(w, "type        %s, importance %d, confidence %.2f", en.Type, en.Importance, en.Confidence)
	if en.Confidence < payload.LowConfidence {
		fmt.Fprint(w, " (low confidence: evidence spoke against it; see its confidence versions)")
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "status      %s", en.Status)
	switch {
	case en.SupersededBy != "":
		fmt.Fprintf(w, " (by %s)", en.SupersededBy)
	case en.ConflictGroup != "":
		fmt.Fprintf(w, " (group %s)", en.ConflictGroup)
	}
	fmt.Fprintln(w)
	if len(en.Tags) > 0 {
		fmt.Fprintf(w, "tags        %v\n", en.Tags)
	}
	fmt.Fprintf(w, "created     %s (seq %d)\nupdated     %s (seq %d)\n\n%s\n", en.CreatedAt, en.CreatedSeq, en.UpdatedAt, en.UpdatedSeq, en.Content)
	fmt.Fprintf(w, "\nversions (%d)\n", len(d.Versions))
	for _, v := range d.Versions {
		ev := fmt.Sprintf("%s %s seq %d", v.EventType, v.Stream, v.Seq)
		if v.Checkpoint != "" {
			ev += " (checkpoint " + v.Checkpoint + ")"
		}
		fmt.Fprintf(w, "  v%d  %s  %-9s  %-10s  %s\n", v.Version, v.Time, v.Op, v.Status, ev)
		if v.Reason != "" {
			fmt.Fprintf(w, "      reason: %s\n", oneLine(v.Reason, 200))
		}
	}
	fmt.Fprintf(w, "\nprovenance (%d)\n", len(d.Provenance))
	for _, p := range d.Provenance {
		if !p.Found {
			fmt.Fprintf(w, "  %s  (not in the index)\n", p.ID)
			continue
		}
		fmt.Fprintf(w, "  %s  %s  %s seq %d  %s\n", p.Time, p.Type, p.Stream, p.Seq, p.ID)
		if p.Text != "" {
			fmt.Fprintf(w, "      %s\n", oneLine(p.Text, 200))
		}
	}
	return nil
}
