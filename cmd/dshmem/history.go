package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"dshmem/events/payload"
	"dshmem/observer"
)

func init() {
	register(&command{
		name:    "history",
		summary: "show the versions of a memory entry or a learned procedure",
		usage: `history [--json] ID

Prints every version of entry ID, oldest first: the op that made it
(add, revise, supersede, conflict, forget, resolve), the status after
it, and the event that made it (stream, seq, id, type and, for a
distiller's memory/ops, the checkpoint id), with the text of that
version and the op's reason. A version whose text 'dshmem scrub' erased
shows "[scrubbed]" and says so.

A confidence version (op "confidence") says which evidence moved it:
a tool result after the entry was shown, the user's confirmation or
correction, or reuse in another session, with the events' ids.

For a learned procedure (ID p-…) it prints every stage change (P0
observed, P1 candidate, P2 validated, P3 active, P4 deprecated), each
with the memory/ops event that made it, the reason, the evidence event
ids, and the steps and check as of that version.

--json prints an array of {entryId, version, op, stream, seq, eventId,
eventType, checkpoint, time, type, title, description, terms, content,
tags, importance, confidence, status, reason}; for a procedure, of
{procedureId, version, stream, seq, eventId, time, stage, reason,
evidence, state}.
It reads the index only: it takes no lock and writes nothing in the
root, so it runs beside a live 'dshmem serve' and sees what the server
has folded. Events the index has not folded yet are told on stderr.
`,
		run: runHistory,
	})
}

func runHistory(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["history"]
	fs := newFlags(c)
	asJSON := fs.Bool("json", false, "print the versions as a JSON array")
	id, err := env.parseEntryID(c, fs, args)
	if err != nil {
		return err
	}
	eng, err := openReader(ctx, env)
	if err != nil {
		return err
	}
	defer eng.Close()
	if strings.HasPrefix(id, "p-") {
		return procedureHistory(ctx, env, eng, id, *asJSON)
	}
	vs, err := eng.History(ctx, id)
	if errors.Is(err, observer.ErrUnknownEntry) {
		return errNoEntry(env, id)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(vs)
	}
	en, err := eng.Entry(ctx, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "%s  %s  (%s, %s, scope %s)\n", en.ID, en.Title, en.Status, en.Type, en.Scope)
	for _, v := range vs {
		ev := fmt.Sprintf("%s seq %d %s", v.Stream, v.Seq, v.EventID)
		if v.EventType != "" {
			ev = v.EventType + " " + ev
		}
		if v.Checkpoint != "" {
			ev += " (checkpoint " + v.Checkpoint + ")"
		}
		fmt.Fprintf(env.stdout, "v%d  %s  %-9s  %-10s  %s\n", v.Version, v.Time, v.Op, v.Status, ev)
		fmt.Fprintf(env.stdout, "    %s\n", oneLine(v.Title, 200))
		if v.Content != v.Title {
			fmt.Fprintf(env.stdout, "    %s\n", oneLine(v.Content, 200))
		}
		if v.Reason != "" {
			fmt.Fprintf(env.stdout, "    reason: %s\n", oneLine(v.Reason, 200))
		}
		if v.Content == payload.ScrubbedText || v.Title == payload.ScrubbedText {
			fmt.Fprintf(env.stdout, "    (its text was erased by 'dshmem scrub')\n")
		}
	}
	return nil
}
