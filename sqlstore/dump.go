package sqlstore

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
)

// dumpTable is one section of Dump: a name and a query whose ORDER BY is
// a key of the rows it returns.
type dumpTable struct {
	name  string
	query string
}

// dumpTables lists, for each table of the schema, the section of Dump
// that covers it. A table the projector fills must appear here; the
// tests fail on a table in sqlite_schema that is neither covered nor
// listed in dumpSkipped.
var dumpTables = []dumpTable{
	{"cursors", `SELECT stream, seq FROM cursors ORDER BY stream`},
	{"events", `SELECT stream, seq, id, type, time, session, data FROM events ORDER BY stream, seq`},
	{"episodes", `SELECT e.stream, e.seq, ep.injected FROM episodes ep JOIN events e ON e.n = ep.n ORDER BY e.stream, e.seq`},
	// The FTS index itself holds rowids, which depend on fold order; its
	// term statistics do not. Text per row is covered by events.data.
	{"episodes_fts", `SELECT term, doc, cnt FROM episodes_terms ORDER BY term`},
	{"sessions", `SELECT session, stream, cwd, origin, parent, agent_preset, started_at, ended_at,
		first_seq, last_seq, first_time, last_time, events, user_turns, user_chars
		FROM sessions ORDER BY session, stream`},
	{"entries", `SELECT id, scope, type, title, description, terms, content, tags, importance, confidence,
		status, conflict_group, supersedes, superseded_by, provenance, created_at, updated_at,
		version, created_seq, updated_seq FROM entries ORDER BY id`},
	{"entries_fts", `SELECT e.id, f.title, f.body, f.bigrams FROM entries_fts f JOIN entries e ON e.n = f.rowid ORDER BY e.id`},
	{"entry_versions", `SELECT entry_id, version, stream, seq, event_id, op, time, type, title, description,
		terms, content, tags, importance, confidence, status, reason FROM entry_versions ORDER BY entry_id, version`},
	{"scopes", `SELECT stream, cwd, seq, time FROM scopes ORDER BY stream`},
	{"archived_scopes", `SELECT stream, seq, time FROM archived_scopes ORDER BY stream`},
	{"day_rotation", `SELECT before FROM day_rotation ORDER BY id`},
	{"event_span", `SELECT first_time FROM event_span ORDER BY id`},
	{"shown", `SELECT session, stream, entry_id, count, last_seq, last_time FROM shown ORDER BY session, stream, entry_id`},
	{"aliases", `SELECT scope, alias_key, expansion_key, alias, expansion, quote, event_id, evidence, seq, time
		FROM aliases ORDER BY scope, alias_key, expansion_key`},
	{"procedures", `SELECT id, scope, stage, trigger, state, version, created_seq, updated_seq, updated_at
		FROM procedures ORDER BY id`},
	{"procedure_versions", `SELECT procedure_id, version, stream, seq, event_id, time, stage, reason, evidence, state
		FROM procedure_versions ORDER BY procedure_id, version`},
}

// fileTables are the tables of the Markdown writer (files.go, and
// projector/files.go): a record
// of the files written under a root, so they exist only where Fold has a
// Root. Dump leaves them out, so an index folded without files compares
// equal to one folded with them; DumpFiles covers them, and replay's
// verify compares both.
var fileTables = []dumpTable{
	{"files", `SELECT path, sha256, bytes, stream, seq, positions, time FROM files ORDER BY path`},
	{"file_texts", `SELECT path, content FROM file_texts ORDER BY path`},
	{"summary_versions", `SELECT stream, seq, time, sha256, content FROM summary_versions ORDER BY stream, seq`},
}

// dumpSkipped are schema objects Dump leaves out on purpose: goose's
// bookkeeping (it records wall-clock times) and fts5vocab views over
// tables already covered.
var dumpSkipped = map[string]bool{
	"goose_db_version": true,
	"episodes_terms":   true,
	"files":            true, // in DumpFiles
	"file_texts":       true, // in DumpFiles
	"summary_versions": true, // in DumpFiles: kept only where Fold has a Root
	// What the file writer has yet to do, and the counts entries_summary's
	// reader keeps by trigger (a function of the entries table).
	"projection_queue":    true,
	"files_intent":        true,
	"entry_counts":        true,
	"entry_status_counts": true, // by trigger, a function of the entries table
	// The encoder's projection of the index's text (sqlstore/vectors):
	// filled in the background, and only where the model is installed,
	// so a replay without it differs there alone; DumpVectors covers it.
	"vectors":      true,
	"vector_state": true, // a random epoch, a count of deletes, a cursor over local rowids
}

// Dump writes every index table in a canonical form: one line per row,
// "table<TAB>JSON array of values", rows in primary-key order, without
// local row numbers (events.n, entries.n) or FTS5 internals. Two indexes
// that hold the same projection dump to the same bytes whatever order
// their events were folded in, which is how the tests compare a live
// index with a rebuilt one.
func (s *Store) Dump(ctx context.Context, w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, t := range dumpTables {
		if err := dumpOne(ctx, s, bw, t); err != nil {
			return fmt.Errorf("dump %s: %w", t.name, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	return nil
}

// DumpFiles writes the files and file_texts tables in Dump's form.
func (s *Store) DumpFiles(ctx context.Context, w io.Writer) error {
	return s.dumpTo(ctx, w, fileTables)
}

// dumpTo writes tables in Dump's form.
func (s *Store) dumpTo(ctx context.Context, w io.Writer, tables []dumpTable) error {
	bw := bufio.NewWriter(w)
	for _, t := range tables {
		if err := dumpOne(ctx, s, bw, t); err != nil {
			return fmt.Errorf("dump %s: %w", t.name, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	return nil
}

func dumpOne(ctx context.Context, s *Store, w *bufio.Writer, t dumpTable) error {
	rows, err := s.db.QueryContext(ctx, t.query)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = string(b)
			}
		}
		line, err := json.Marshal(vals)
		if err != nil {
			return err
		}
		w.WriteString(t.name)
		w.WriteByte('\t')
		w.Write(line)
		w.WriteByte('\n')
	}
	return rows.Err()
}
