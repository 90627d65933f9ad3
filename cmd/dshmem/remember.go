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
		name:    "remember",
		summary: "store a memory entry explicitly",
		usage: `remember [--cwd DIR | --global] [--type T] [--tags a,b] [--importance N] [--title T] [--json] TEXT

Appends a memory/remember event and prints the id of the entry it made
(m-…). The entry belongs to the scope of DIR (default: the current
directory; a subdirectory of a project reaches the project's scope), or
with --global to the global scope that every workspace sees. TEXT is redacted like every event; text that is nothing but a
secret (an API key, a password) is refused: remember where the secret
is kept instead.

--type is one of preference, decision, architecture, rule, fact, fix,
procedure (default fact); --importance 0–3 (default 1); --title defaults
to the first line of TEXT. --json prints the entry as 'entries --json'
does.
`,
		run: runRemember,
	})
}

func runRemember(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["remember"]
	fs := newFlags(c)
	cwd := fs.String("cwd", "", "workspace directory (default: the current directory)")
	global := fs.Bool("global", false, "remember in the global scope, for every workspace")
	typ := fs.String("type", "", "entry type: "+strings.Join(payload.EntryTypes, ", "))
	tags := fs.String("tags", "", "comma-separated tags")
	importance := fs.Int("importance", 1, "importance 0–3")
	title := fs.String("title", "", "title (default: the first line of TEXT)")
	asJSON := fs.Bool("json", false, "print the entry as JSON")
	text, err := env.parseText(c, fs, args, "the TEXT to remember")
	if err != nil {
		return err
	}
	if *global && *cwd != "" {
		return usageError{"--cwd and --global both choose the scope; give one"}
	}
	if *typ != "" && !payload.KnownEntryType(*typ) {
		return usageError{fmt.Sprintf("--type %q is not an entry type: use one of %s", *typ, strings.Join(payload.EntryTypes, ", "))}
	}
	req := observer.RememberRequest{Content: text, Title: *title, Type: *typ, Tags: splitCommaList(*tags)}
	if *importance < 0 || *importance > 3 {
		return usageError{fmt.Sprintf("--importance %d is out of range (0..3)", *importance)}
	}
	if flagSet(fs, "importance") {
		req.Importance = importance
	}
	if !*global {
		// The entry goes to the scope of the directory: a subdirectory
		// of a project reaches the project's scope (intake resolves it).
		if req.Cwd, err = workDir(*cwd); err != nil {
			return fmt.Errorf("%w (pass --cwd DIR or --global)", err)
		}
	}
	eng, err := openEngine(ctx, env)
	if err != nil {
		return forwardRemember(ctx, env, err, req, *asJSON) // a server holds the root (forward.go)
	}
	defer eng.Close()
	en, err := eng.Remember(ctx, req)
	var refused *observer.RefusedError
	if errors.As(err, &refused) {
		return fmt.Errorf("nothing stored: %s", strings.TrimPrefix(err.Error(), "refused: "))
	}
	if err != nil {
		return err
	}
	if err := eng.Close(); err != nil {
		return fmt.Errorf("close root: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(en)
	}
	fmt.Fprintln(env.stdout, en.ID)
	return nil
}

// splitCommaList splits a comma-separated flag value, dropping blanks.
func splitCommaList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
