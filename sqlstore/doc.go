// Package sqlstore is the SQLite index of dshmem: it opens and migrates
// the database, holds every query the other packages run, as named
// methods (the projector's fold and file writes, reads, recall's
// probes), and runs audit SQL on a read-only connection.
//
// The index is derived from the event log and can always be rebuilt from
// it; the projector writes it (one transaction per fold, rows and cursor
// together), everything else reads it.
//
// # Files
//
// store.go opens and closes (checkpoint.go runs the WAL checkpointer,
// migrate.go the migrations); fold.go is the projector's write
// transaction (FoldTx); projections.go the reads the Markdown files are
// rendered from (Reader, on the pool, a snapshot or a fold), files.go
// the record of written files; dump.go the canonical dump the tests and
// verify compare; rebuild.go what replay sets and reads; read.go,
// entries.go and sessions.go the engine's reads; corpus.go recall's
// probes and fetches; audit.go the read-only audit connection. No other
// package writes SQL: a new query is a method here.
//
// # Connections
//
// Open uses a file: URI (URI parameters are ignored on a plain path) with
// the pragmas in the DSN, so that every pooled connection gets them:
// journal_mode(WAL), synchronous(NORMAL) (a lost tail after a power cut is
// folded again from the log), busy_timeout(5000), foreign_keys(1),
// temp_store(MEMORY), cache_size(-32768) and _txlock=immediate (a write
// transaction takes the write lock at BEGIN, so concurrent writers wait
// on busy_timeout instead of failing to upgrade). Open applies every
// pending migration with a quiet goose provider; MigrationStatus,
// MigrateUp and MigrateDownTo open without applying anything.
//
// OpenReadOnly is the audit connection of `dshmem sql`, locked three ways:
// mode=ro, query_only(1), and an SQLite authorizer installed on each
// connection of a private driver (nothing registered process-wide) that
// allows reads, read-only pragmas and transactions, and denies everything
// else: DML, DDL (temp objects too), ATTACH/DETACH, PRAGMA assignments.
// VACUUM, which the authorizer never sees and which with INTO writes a
// new file, is refused by a keyword check. A refused statement returns
// ErrReadOnly, whose text tells the user to use dshmem commands instead.
//
// # Schema (migrations/)
//
//	events(n, stream, seq, id, type, time, session, data)   UNIQUE(stream, seq), UNIQUE(stream, id)
//	episodes(n, injected)                                    n = events.n
//	episodes_fts(bigrams)                                    contentless FTS5, rowid = events.n
//	episodes_terms                                           fts5vocab(row) of episodes_fts
//	episode_texts                                            view: (stream, seq, event_id, …, text)
//	sessions(session, stream, cwd, origin, …, user_turns)    PK(session, stream)
//	entries(n, id, scope, type, title, …, version, …)        id UNIQUE
//	entry_versions(entry_id, version, stream, seq, op, …)    PK(entry_id, version)
//	entries_fts(title, body, bigrams)                        ordinary FTS5, rowid = entries.n
//	cursors(stream, seq)
//	files(path, sha256, bytes, stream, seq, positions, time)
//
// n columns are local row numbers (INTEGER PRIMARY KEY, so VACUUM keeps
// them) that tie rows to FTS5 rowids. They depend on the order in which
// streams were folded and are not content: projector.Dump leaves them
// out.
//
// # Why episodic text is stored once
//
// A naive design (an FTS5 table holding the text, positions, and the
// bigram form) costs about 362 bytes per row in the FTS table alone and
// copies every message twice. Here:
//
//   - the text lives only in events.data (the redacted JSON as logged);
//     the episode_texts view and recall's fetch extract it with ->>;
//   - episodes_fts is contentless (content is the empty string): it keeps the inverted
//     index and nothing else;
//   - with detail=none the index records only which rows hold a term.
//     Recall's probes are single-token phrases (tokenize.Quote), which
//     need no positions. Measured with the BenchmarkFold corpus of
//     small vocabulary: 55 bytes per event, against 162 with detail=column
//     and 177 with detail=full; with the Zipf vocabulary: 152;
//   - the column is fed distinct terms (tokenize.Terms), already folded,
//     through the ascii tokenizer.
//
// Measured per event of ~300 bytes of mixed Chinese and English (Zipf
// vocabulary, 100k events): events row ≈ 447 bytes (text 300 + JSON,
// id, stream, time), its two unique indexes ≈ 69, episodes_fts ≈ 153 +
// 12 (docsize), episodes ≈ 9: about 800 bytes per event all in, about
// 700 with a small vocabulary.
//
// # Recall
//
// sqlstore/recall ranks memories for `dshmem recall`, `dshmem search`
// and the server; the queries it runs are here (corpus.go: bounded
// FTS5 probes, corpus sizes, fetches by rowid, shown counts), each
// prepared once per Store.
package sqlstore
