package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"dshmem/observer"
	"dshmem/observer/httpapi"
	"dshmem/sqlstore/recall"
)

func init() {
	register(&command{
		name:    "recall",
		summary: "find the memories a query means",
		usage: `recall [--cwd DIR] [--kind K] [--limit N] [--bytes B] [--session ID] [--timeout D] [--include-injected] [--json] QUERY

Ranks the memory entries of the scope of DIR (default: the current
directory, or the session's when --session is given; a subdirectory of a
project reaches the project's scope) and of the global scope. FTS5 finds a bounded set of candidates; they are re-ranked by
exact phrase, normalized substring, title, tags, terms, token coverage,
term proximity (adjacent CJK bigrams), single Chinese characters, BM25,
importance, recency and — with --session — how often the session was
already shown each entry (each recall is recorded as a memory/shown
event, so repeated recalls rotate).

At most N entries and B bytes of text are returned (the last one cut at
a character boundary). Conflicting entries appear only when the query
hits them, flagged "conflict"; superseded and forgotten ones never.
Entries not updated for 180 days are flagged "review". A QUERY that is
an entry id (m-…) or the name of a file under <root>/knowledge/ returns
that entry or file whole. The recall stops at its deadline (--timeout)
and returns what it has, with a note.

--kind semantic (the default) ranks memory entries, episodic the observed
messages of those scopes, all both. Text the host or dshmem injected into
a conversation (runtime context, memory shown back, dshmem's own tool
results) is never an episodic hit unless --include-injected is given; it
then comes ranked down and flagged "injected".

--json prints {items:[{id, kind, scope, title, text, score, status,
flags, …}], terms, candidates, partial, note, guidance}.

Without --session it reads the index only: it takes no lock and writes
nothing in the root, so it runs beside a live 'dshmem serve' and sees
what the server has folded (events not folded yet are told on stderr).
--session records what was shown (a memory/shown event): a write, made
here when no process holds the root; while 'dshmem serve' holds it the
recall is sent to the server, which answers and records it; while any
other process holds it, the record is skipped with a note.

With the sentence encoder installed, it fuses the vectors of the kinds
it ranks in its scopes with the words when there are at most 40,000;
with more it sends the query to the 'dshmem serve' holding the root,
which keeps them loaded, or, without one, ranks by words alone and
says so.
`,
		run: runRecall,
	})
}

func runRecall(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["recall"]
	fs := newFlags(c)
	cwd := fs.String("cwd", "", "workspace directory (default: the current directory)")
	limit := fs.Int("limit", recall.DefaultLimit, "at most this many entries")
	bytes := fs.Int("bytes", recall.DefaultBytes, "at most this many UTF-8 bytes of text")
	session := fs.String("session", "", "session id: rank down what it was already shown, and record what is shown now")
	timeout := fs.Duration("timeout", recall.DefaultTimeout, "deadline of the recall")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	kind := fs.String("kind", recall.KindSemantic, "what to rank: semantic, episodic or all")
	injected := fs.Bool("include-injected", false, "also rank text the host or dshmem injected (episodic)")
	query, err := env.parseText(c, fs, args, "a QUERY")
	if err != nil {
		return err
	}
	switch *kind {
	case recall.KindEpisodic, recall.KindSemantic, recall.KindAll:
	default:
		return usageError{fmt.Sprintf("--kind %q: use semantic, episodic or all", *kind)}
	}
	if *limit < 1 || *limit > 100 {
		return usageError{fmt.Sprintf("--limit %d is out of range (1..100)", *limit)}
	}
	if *bytes < 1 || *bytes > 1<<20 {
		return usageError{fmt.Sprintf("--bytes %d is out of range (1..1048576)", *bytes)}
	}
	if *timeout <= 0 || *timeout > time.Minute {
		return usageError{fmt.Sprintf("--timeout %v is out of range (a positive duration up to 1m)", *timeout)}
	}
	// A session's recalls are recorded (memory/shown), which needs the
	// writer; without a session, or while a server holds the root, read.
	record := *session != "" && observer.HolderPID(env.root) == 0
	var eng *observer.Engine
	if record {
		eng, err = openExisting(ctx, env)
	} else {
		eng, err = openReader(ctx, env)
	}
	if err != nil {
		return err
	}
	defer eng.Close()
	dir := ""
	if *cwd != "" {
		if dir, err = workDir(*cwd); err != nil {
			return err
		}
	}
	if dir == "" && *session != "" {
		if d, ok, err := eng.SessionCwd(ctx, *session); err != nil {
			return err
		} else if ok {
			dir = d
		}
	}
	if dir == "" {
		if dir, err = workDir(""); err != nil {
			return fmt.Errorf("%w (pass --cwd DIR)", err)
		}
	}
	sc := eng.Scope(dir)
	scopes := []string{sc.Stream}
	if sc.Stream != observer.GlobalStream {
		scopes = append(scopes, observer.GlobalStream)
	}
	now := time.Now()
	var res *recall.Result
	// A session's recall while a server holds the root is the server's
	// to answer and record, whatever the vectors; else the vectors decide.
	var cl *httpapi.Client
	if *session != "" && !record {
		cl = server(env)
	}
	if cl == nil {
		cl = useEncoder(ctx, env, eng, "recall", query, denseKinds(*kind), scopes)
	}
	if cl != nil {
		// The server records what it showed to the session itself.
		res = askServer(ctx, env, cl, "/v1/recall", httpapi.RecallRequest{Query: query, Cwd: dir, Session: *session,
			Kind: *kind, Limit: *limit, Bytes: *bytes, TimeoutMs: int(timeout.Milliseconds()), IncludeInjected: *injected},
			*timeout+askSlack)
	}
	served := res != nil
	if !served {
		res, err = eng.Recall(ctx, recall.Query{Text: query, Kind: *kind, Scopes: scopes, Session: *session,
			Limit: *limit, Bytes: *bytes, Now: now, Timeout: *timeout, IncludeInjected: *injected,
			ScopeDirs: map[string]string{sc.Stream: sc.Dir}})
		if err != nil {
			return fmt.Errorf("recall %q: %w", query, err)
		}
	}
	if *session != "" && !served {
		var ids []string
		for _, it := range res.Items {
			if it.ShownEntry() {
				ids = append(ids, it.ID)
			}
		}
		if !record {
			if len(ids) > 0 {
				fmt.Fprintf(env.stderr, "dshmem: another process holds the root; what was shown to %s is not recorded\n", *session)
			}
		} else if err := eng.RecordShown(ctx, *session, dir, "recall", ids, now); err != nil {
			fmt.Fprintf(env.stderr, "dshmem: %v\n", err)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	printRecall(env, res)
	return nil
}

// printRecall prints a result for people.
func printRecall(env *cliEnv, res *recall.Result) {
	if len(res.Items) == 0 {
		fmt.Fprintln(env.stdout, res.Guidance)
	}
	for i, it := range res.Items {
		head := it.Title
		if it.Episode != nil {
			head = fmt.Sprintf("[%s] %s %s seq %d  %s", it.Episode.Type, it.Episode.Time, it.Episode.Stream, it.Episode.Seq, it.Episode.EventID)
		}
		flags := ""
		if len(it.Flags) > 0 {
			flags = "  [" + strings.Join(it.Flags, ", ") + "]"
		}
		fmt.Fprintf(env.stdout, "%d. %s  (%s %s, score %.3f)%s\n", i+1, head, it.Kind, it.ID, it.Score, flags)
		for l := range strings.Lines(strings.TrimRight(it.Text, "\n")) {
			fmt.Fprintf(env.stdout, "   %s", l)
		}
		fmt.Fprintln(env.stdout)
	}
	if res.Note != "" {
		fmt.Fprintf(env.stdout, "Note: %s\n", res.Note)
	}
	if len(res.Expanded) > 0 {
		fmt.Fprintf(env.stdout, "Expanded with the aliases of this scope: %s\n", strings.Join(res.Expanded, "; "))
	}
}
