package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"dshmem/observer"
	"dshmem/observer/httpapi"
)

func init() {
	register(&command{
		name:    "scopes",
		summary: "list scopes; archive, restore or purge a workspace's memory",
		usage: `scopes list [--archived] [--json]
       dshmem scopes archive [--json] KEY|DIR
       dshmem scopes restore [--json] KEY|DIR
       dshmem scopes purge [--json] KEY --confirm KEY

A scope is where memory lives: "global", or one workspace ("ws-" and 20
hex digits, named for its directory).

list     shows each scope: key, directory, entries by status (active,
         conflict, superseded, forgotten), sessions, bytes of log on disk
         and the time of its newest event. --archived shows the recycle
         bin instead. It only reads, so it runs beside 'dshmem serve'.
archive  moves a workspace to the recycle bin: a scope/archive event in
         its stream; its files move to archived/ws-<id>/ and recall,
         search, the session-start context and packets leave it out.
         Nothing is deleted, and events that arrive for it later are
         kept; it stays archived until restored.
restore  takes it out of the recycle bin (a scope/restore event).
purge    deletes a workspace for good: its log segments, every index row
         and its files; sessions/DAY.md files are rendered again without
         its blocks. It asks for the key twice (--confirm KEY) and never
         purges "global". The global stream keeps a one-line scope/purge
         record with the key.

KEY|DIR is a scope key or a workspace directory (relative to here, or
absolute; a subdirectory names the scope it lies in). When 'dshmem serve'
holds the root, archive, restore and purge are sent to it.

Examples:
  dshmem scopes list
  dshmem scopes list --archived --json
  dshmem scopes archive ~/work/old-project
  dshmem scopes restore ws-3f1a2b4c5d6e7f809a1b
  dshmem scopes purge ws-3f1a2b4c5d6e7f809a1b --confirm ws-3f1a2b4c5d6e7f809a1b
`,
		run: runScopes,
	})
}

func runScopes(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["scopes"]
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) == 0 {
			return usageError{"needs a subcommand: list, archive, restore or purge"}
		}
		printCommandUsage(env.stdout, c)
		return nil
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "list", "ls":
		return runScopesList(ctx, env, c, rest)
	case "archive", "restore", "purge":
		return runScopeChange(ctx, env, c, sub, rest)
	}
	return usageError{fmt.Sprintf("unknown subcommand %q: use list, archive, restore or purge", sub)}
}

func runScopesList(ctx context.Context, env *cliEnv, c *command, args []string) error {
	fs := newFlags(c)
	archived := fs.Bool("archived", false, "list the recycle bin (archived scopes) instead of the active ones")
	asJSON := fs.Bool("json", false, "print the scopes as a JSON array")
	if err := env.parseNoArgs(c, fs, args); err != nil {
		return err
	}
	eng, err := openReader(ctx, env)
	if err != nil {
		return err
	}
	defer eng.Close()
	list, err := eng.Scopes(ctx, *archived)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(env, list)
	}
	if len(list) == 0 {
		if *archived {
			fmt.Fprintln(env.stdout, "the recycle bin is empty")
		} else {
			fmt.Fprintln(env.stdout, "no scope holds events yet")
		}
		return nil
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tDIRECTORY\tACTIVE\tCONFLICT\tSUPERSEDED\tFORGOTTEN\tSESSIONS\tBYTES\tLAST ACTIVITY")
	for _, s := range list {
		dir := s.Dir
		if dir == "" {
			dir = "-"
		}
		last := s.LastActivity
		if last == "" {
			last = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", s.Key, dir, s.Entries["active"], s.Entries["conflict"],
			s.Entries["superseded"], s.Entries["forgotten"], s.Sessions, humanBytes(s.Bytes), last)
	}
	return tw.Flush()
}

func runScopeChange(ctx context.Context, env *cliEnv, c *command, verb string, args []string) error {
	fs := newFlags(c)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	var confirm *string
	if verb == "purge" {
		confirm = fs.String("confirm", "", "the scope key once more: purge deletes the scope for good")
	}
	pos, err := env.parseFlags(c, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
		return usageError{fmt.Sprintf("scopes %s needs exactly one scope key (ws-…) or workspace directory", verb)}
	}
	arg, err := scopeArg(pos[0])
	if err != nil {
		return err
	}
	conf := ""
	if confirm != nil {
		conf = *confirm
		if !flagSet(fs, "confirm") {
			hint := fmt.Sprintf("dshmem scopes purge %s --confirm %s", pos[0], pos[0])
			if !strings.HasPrefix(pos[0], "ws-") {
				hint = "dshmem scopes purge KEY --confirm KEY, with the key 'dshmem scopes list' shows for " + arg
			}
			return usageError{"scopes purge deletes the scope for good: repeat its key with --confirm (" + hint + ")"}
		}
	}
	eng, err := openExisting(ctx, env)
	if err != nil {
		return forwardScope(ctx, env, err, verb, arg, conf, *asJSON) // a server holds the root
	}
	defer eng.Close()
	key, err := eng.ScopeKey(arg)
	if err != nil {
		return err
	}
	var out any
	switch verb {
	case "archive":
		out, err = eng.ArchiveScope(ctx, key)
	case "restore":
		out, err = eng.RestoreScope(ctx, key)
	default:
		out, err = eng.PurgeScope(ctx, key, conf)
	}
	if err != nil {
		return err
	}
	if err := eng.Close(); err != nil {
		return fmt.Errorf("close root: %w", err)
	}
	return printScopeChange(env, verb, out, *asJSON)
}

// scopeArg is the scope a command line names: a key as given, a
// directory made absolute.
func scopeArg(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == observer.GlobalStream || strings.HasPrefix(s, "ws-") {
		return s, nil
	}
	return workDir(s)
}

// forwardScope sends archive, restore or purge to the server holding
// the root.
func forwardScope(ctx context.Context, env *cliEnv, openErr error, verb, arg, confirm string, asJSON bool) error {
	var out any
	var info observer.ScopeInfo
	var rep observer.PurgeReport
	if verb == "purge" {
		out = &rep
	} else {
		out = &info
	}
	if err := onServer(ctx, env, openErr, saySentTo, "/v1/scopes/"+verb, httpapi.ScopeAPIRequest{Key: arg, Confirm: confirm}, out, nil); err != nil {
		var re *httpapi.RefusedError
		if errors.As(err, &re) {
			return fmt.Errorf("scopes %s: %s", verb, re.Message)
		}
		return err
	}
	if verb == "purge" {
		return printScopeChange(env, verb, rep, asJSON)
	}
	return printScopeChange(env, verb, info, asJSON)
}

func printScopeChange(env *cliEnv, verb string, out any, asJSON bool) error {
	if asJSON {
		return printJSON(env, out)
	}
	switch v := out.(type) {
	case observer.ScopeInfo:
		name := observer.DescribeStream(v.Key, v.Dir)
		if verb == "archive" {
			fmt.Fprintf(env.stdout, "archived %s\nits files are in archived/%s/; recall, context and packets leave it out\nbring it back with: dshmem scopes restore %s\n", name, v.Key, v.Key)
		} else {
			fmt.Fprintf(env.stdout, "restored %s\nits files are back in scopes/%s/\n", name, v.Key)
		}
	case observer.PurgeReport:
		fmt.Fprintf(env.stdout, "purged %s: %d events, %s removed from disk\n", v.Key, v.Events, humanBytes(v.Bytes))
		for _, f := range v.Files {
			fmt.Fprintf(env.stdout, "  %s\n", f)
		}
	}
	return nil
}
