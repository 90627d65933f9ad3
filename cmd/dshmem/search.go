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
		name:    "search",
		summary: "full-text search over observed messages and memory entries",
		usage: `search [--cwd DIR | --stream S] [--kind K] [--limit N] [--include-injected] [--json] QUERY

Searches the episodic record — user and assistant messages, tool results,
compaction summaries — with SQLite FTS5. Chinese is indexed as character
bigrams, so a two-character word such as 记忆 is found inside longer text;
code identifiers match their parts (parseConfig matches "config"). Hits
are ranked by the same machinery as 'dshmem recall' (BM25, coverage,
proximity, phrase, recency), without its score floors.

--kind episodic (the default) searches observed messages, semantic the
memory entries (active and conflicting), all both, ranked together.

--cwd limits the search to the scope of DIR (a subdirectory of a project
reaches the project's scope: see "Workspaces" in the README), --stream
to a stream by name ("global" or "ws-<id>"); the default searches every
stream.

Text the host or dshmem injected into a conversation (the runtime-context
snapshot, memory shown back, dshmem's own tool results) is left out;
--include-injected brings it back, ranked down and flagged "injected".
--json prints an array of {kind, id, scope, title, text, score, status,
flags}; an episodic hit also carries {eventId, stream, seq, type,
session, time, injected}.
It reads the index only: it takes no lock and writes nothing in the
root, so it runs beside a live 'dshmem serve' and sees what the server
has folded. Events the index has not folded yet are told on stderr.
With the sentence encoder installed, it fuses the vectors of the kinds
it searches in its streams when there are at most 40,000; with more it
sends the query to the 'dshmem serve' holding the root, which keeps them
loaded, or, without one, searches by words alone and says so.
`,
		run: runSearch,
	})
}

func runSearch(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["search"]
	fs := newFlags(c)
	cwd := fs.String("cwd", "", "search only the workspace of this directory")
	stream := fs.String("stream", "", `search only this stream ("global" or "ws-<id>")`)
	limit := fs.Int("limit", 10, "at most this many results")
	kind := fs.String("kind", recall.KindEpisodic, "what to search: episodic, semantic or all")
	asJSON := fs.Bool("json", false, "print results as a JSON array")
	injected := fs.Bool("include-injected", false, "also search text the host or dshmem injected")
	query, err := env.parseText(c, fs, args, "a QUERY")
	if err != nil {
		return err
	}
	if *cwd != "" && *stream != "" {
		return usageError{"--cwd and --stream both choose the stream; give one"}
	}
	switch *kind {
	case recall.KindEpisodic, recall.KindSemantic, recall.KindAll:
	default:
		return usageError{fmt.Sprintf("--kind %q: use episodic, semantic or all", *kind)}
	}
	if *limit < 1 || *limit > 1000 {
		return usageError{fmt.Sprintf("--limit %d is out of range (1..1000)", *limit)}
	}
	s := *stream
	if s != "" && !observer.ValidStream(s) {
		return usageError{fmt.Sprintf("--stream %q is not a stream name: use \"global\" or \"ws-\" followed by 20 hex digits (see 'dshmem stats')", s)}
	}
	dir := ""
	if *cwd != "" {
		if dir, err = workDir(*cwd); err != nil {
			return err
		}
	}
	eng, err := openReader(ctx, env)
	if err != nil {
		return err
	}
	defer eng.Close()
	where := "any stream"
	var scopes []string
	if dir != "" {
		sc := eng.Scope(dir)
		s, where = sc.Stream, sc.String()
	} else if s != "" {
		where = scopeNamed(eng, s)
	}
	if s != "" {
		scopes = []string{s}
	}
	var res *recall.Result
	if cl := useEncoder(ctx, env, eng, "search", query, denseKinds(*kind), scopes); cl != nil {
		req := httpapi.SearchRequest{Query: query, Cwd: dir, Kind: *kind, Limit: *limit, IncludeInjected: *injected}
		if dir == "" {
			req.Stream = s
		}
		res = askServer(ctx, env, cl, "/v1/search", req, searchWait)
	}
	if res == nil {
		if res, err = eng.Recall(ctx, recall.Query{Text: query, Kind: *kind, Scopes: scopes,
			Limit: *limit, Bytes: -1, NoFloor: true, IncludeInjected: *injected}); err != nil {
			return fmt.Errorf("search %q: %w", query, err)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res.Items)
	}
	if len(res.Items) == 0 {
		what := map[string]string{recall.KindEpisodic: "messages", recall.KindSemantic: "memory entries", recall.KindAll: "messages or memory entries"}[*kind]
		fmt.Fprintf(env.stdout, "No %s match %q in %s.\nTry fewer or other words, --kind all, or drop --cwd/--stream to search every stream", what, query, where)
		if s != "" && s != observer.GlobalStream && !eng.HasStream(s) {
			fmt.Fprintf(env.stdout, " (no memory for %s yet: no session or remember has used it)", where)
		}
		if *kind != recall.KindSemantic && !*injected {
			fmt.Fprint(env.stdout, "; --include-injected searches text the host or dshmem injected too")
		}
		fmt.Fprintln(env.stdout, ".")
		return nil
	}
	for i, h := range res.Items {
		if h.Episode != nil {
			mark := ""
			if h.Episode.Injected {
				mark = "  [injected]"
			}
			fmt.Fprintf(env.stdout, "%d. [%s] %s %s seq %d  %s  (score %.3f)%s\n", i+1, h.Episode.Type, h.Episode.Time, h.Episode.Stream, h.Episode.Seq, h.Episode.EventID, h.Score, mark)
		} else {
			fmt.Fprintf(env.stdout, "%d. [entry %s] %s  %s  (score %.3f)\n", i+1, h.Status, h.Scope, h.ID, h.Score)
			fmt.Fprintf(env.stdout, "   %s\n", oneLine(h.Title, 200))
		}
		fmt.Fprintf(env.stdout, "   %s\n", oneLine(h.Text, 200))
	}
	if res.Note != "" {
		fmt.Fprintf(env.stdout, "Note: %s\n", res.Note)
	}
	return nil
}

// searchWait is how long a search sent to the server waits for its
// answer.
const searchWait = 30 * time.Second

// oneLine flattens whitespace and cuts s to at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
