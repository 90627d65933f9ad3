package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"dshmem/observer"
	"dshmem/sqlstore"
)

func init() {
	register(&command{
		name:    "search",
		summary: "full-text search over observed messages",
		usage: `search [--cwd DIR | --stream S] [--limit N] [--json] QUERY

Searches the episodic record — user and assistant messages, tool results,
compaction summaries — with SQLite FTS5. Chinese is indexed as character
bigrams, so a two-character word such as 记忆 is found inside longer text;
code identifiers match their parts (parseConfig matches "config").

--cwd limits the search to that workspace's stream, --stream to a stream
by name ("global" or "ws-<id>"); the default searches every stream.
--json prints an array of {eventId, stream, seq, type, session, time,
text, score}.
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
	asJSON := fs.Bool("json", false, "print results as a JSON array")
	pos, err := env.parseFlags(c, fs, args)
	if err != nil {
		return err
	}
	query := strings.TrimSpace(strings.Join(pos, " "))
	if query == "" {
		return usageError{"needs a QUERY"}
	}
	if *cwd != "" && *stream != "" {
		return usageError{"--cwd and --stream both choose the stream; give one"}
	}
	if *limit < 1 || *limit > 1000 {
		return usageError{fmt.Sprintf("--limit %d is out of range (1..1000)", *limit)}
	}
	s := *stream
	if *cwd != "" {
		s = observer.StreamForCwd(*cwd)
	}
	if s != "" && !observer.ValidStream(s) {
		return usageError{fmt.Sprintf("--stream %q is not a stream name: use \"global\" or \"ws-\" followed by 20 hex digits (see 'dshmem stats')", s)}
	}
	eng, err := openReader(ctx, env)
	if err != nil {
		return err
	}
	defer eng.Close()
	hits, err := eng.Store().Search(ctx, sqlstore.SearchQuery{Text: query, Stream: s, Limit: *limit})
	if err != nil {
		return fmt.Errorf("search %q: %w", query, err)
	}
	if *asJSON {
		if hits == nil {
			hits = []sqlstore.Hit{}
		}
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(hits)
	}
	if len(hits) == 0 {
		where := "every stream"
		if s != "" {
			where = "stream " + s
		}
		fmt.Fprintf(env.stdout, "No messages match %q in %s.\nTry fewer or other words, or drop --cwd/--stream to search every stream.\n", query, where)
		return nil
	}
	for i, h := range hits {
		fmt.Fprintf(env.stdout, "%d. [%s] %s %s seq %d  %s  (score %.3f)\n", i+1, h.Type, h.Time, h.Stream, h.Seq, h.EventID, h.Score)
		fmt.Fprintf(env.stdout, "   %s\n", oneLine(h.Text, 200))
	}
	return nil
}

// oneLine flattens whitespace and cuts s to at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
