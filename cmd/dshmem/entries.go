package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"dshmem/events/payload"
	"dshmem/observer"
)

func init() {
	register(&command{
		name:    "entries",
		summary: "list memory entries",
		usage: `entries [--cwd DIR | --stream S] [--status S] [--json]

Lists the memory entries of the index: by scope, then in the order they
were made, each scope headed by its directory and stream. --cwd limits
the list to the scope of DIR (a subdirectory of a project reaches the
project's scope), --stream to a stream by name ("global" or "ws-<id>");
the default lists every scope.
--status is active, conflict, superseded or forgotten (default: all).

--json prints an array of {id, scope, type, title, description, terms,
content, tags, importance, confidence, status, conflictGroup, supersedes,
supersededBy, provenance, createdAt, updatedAt, version, createdSeq,
updatedSeq}.
It reads the index only: it takes no lock and writes nothing in the
root, so it runs beside a live 'dshmem serve' and sees what the server
has folded. Events the index has not folded yet are told on stderr.
`,
		run: runEntries,
	})
}

func runEntries(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["entries"]
	fs := newFlags(c)
	cwd := fs.String("cwd", "", "only the workspace of this directory")
	stream := fs.String("stream", "", `only this stream ("global" or "ws-<id>")`)
	status := fs.String("status", "", "only entries of this status: "+strings.Join(payload.Statuses, ", "))
	asJSON := fs.Bool("json", false, "print the entries as a JSON array")
	if err := env.parseNoArgs(c, fs, args); err != nil {
		return err
	}
	if *cwd != "" && *stream != "" {
		return usageError{"--cwd and --stream both choose the stream; give one"}
	}
	var f observer.EntryFilter
	s := *stream
	if s != "" && !observer.ValidStream(s) {
		return usageError{fmt.Sprintf("--stream %q is not a stream name: use \"global\" or \"ws-\" followed by 20 hex digits", s)}
	}
	dir := ""
	if *cwd != "" {
		var err error
		if dir, err = workDir(*cwd); err != nil {
			return err
		}
	}
	if *status != "" {
		if !payload.KnownStatus(*status) {
			return usageError{fmt.Sprintf("--status %q is not a status: use one of %s", *status, strings.Join(payload.Statuses, ", "))}
		}
		f.Statuses = []string{*status}
	}
	eng, err := openReader(ctx, env)
	if err != nil {
		return err
	}
	defer eng.Close()
	if dir != "" {
		s = eng.Scope(dir).Stream
	}
	if s != "" {
		f.Scopes = []string{s}
	}
	es, err := eng.Entries(ctx, f)
	if err != nil {
		return err
	}
	if *asJSON {
		if es == nil {
			es = []observer.Entry{}
		}
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(es)
	}
	if len(es) == 0 {
		switch {
		case dir != "":
			sc := eng.Scope(dir)
			if sc.Stream != observer.GlobalStream && !eng.HasStream(sc.Stream) {
				fmt.Fprintf(env.stdout, "No memory for %s yet: no session or remember has used it.\n", sc)
				return nil
			}
			fmt.Fprintf(env.stdout, "No entries in %s.", sc)
		case s != "":
			fmt.Fprintf(env.stdout, "No entries in %s.", scopeNamed(eng, s))
		default:
			fmt.Fprint(env.stdout, "No entries.")
		}
		fmt.Fprintln(env.stdout, " Add one with 'dshmem remember TEXT', or let 'dshmem checkpoint' distil the conversations.")
		return nil
	}
	scope := ""
	for _, e := range es {
		if e.Scope != scope {
			scope = e.Scope
			fmt.Fprintf(env.stdout, "%s\n", scopeNamed(eng, scope))
		}
		extra := ""
		switch {
		case e.ConflictGroup != "":
			extra = "  [" + e.ConflictGroup + "]"
		case e.SupersededBy != "":
			extra = "  → " + e.SupersededBy
		}
		if e.Confidence < payload.LowConfidence {
			extra += fmt.Sprintf("  [low confidence %.2f]", e.Confidence)
		}
		fmt.Fprintf(env.stdout, "  %s  %-10s  %-12s  %s%s\n", e.ID, e.Status, e.Type, oneLine(e.Title, 100), extra)
	}
	return nil
}
