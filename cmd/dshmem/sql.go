package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
)

func init() {
	register(&command{
		name:    "sql",
		summary: "run a read-only SQL query against the index",
		usage: `sql [--json] QUERY

Runs QUERY on a read-only connection to index.db, for audit and
debugging: SELECT works; INSERT, UPDATE, DELETE and DDL are refused.
Memory changes only through events (ingest, remember, forget), so the
index can always be rebuilt from the log.

Tables: events, sessions, entries, entry_versions, cursors, files, and
the FTS5 tables for episodic text and entries.
Example: dshmem sql "SELECT type, count(*) FROM events GROUP BY type"
It reads the index only: it takes no lock and writes nothing in the
root, so it runs beside a live 'dshmem serve' and sees what the server
has folded. Events the index has not folded yet are told on stderr.
`,
		run: runSQL,
	})
}

func runSQL(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["sql"]
	fs := newFlags(c)
	asJSON := fs.Bool("json", false, "print rows as a JSON array of objects")
	q, err := env.parseText(c, fs, args, "a QUERY")
	if err != nil {
		return err
	}
	eng, err := openReader(ctx, env)
	if err != nil {
		return err
	}
	defer eng.Close()
	cols, rows, err := eng.Query(ctx, q)
	if err != nil {
		return err
	}
	if *asJSON {
		objs := make([]map[string]any, 0, len(rows))
		for _, r := range rows {
			o := make(map[string]any, len(cols))
			for i, c := range cols {
				o[c] = jsonValue(r[i])
			}
			objs = append(objs, o)
		}
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(objs)
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, v := range r {
			cells[i] = oneLine(fmt.Sprint(jsonValue(v)), 120)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	fmt.Fprintf(env.stderr, "(%d row(s))\n", len(rows))
	return nil
}

// jsonValue turns driver values into something JSON and text print well.
func jsonValue(v any) any {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case nil:
		return nil
	default:
		return x
	}
}
