// Package projector folds events into the SQLite index: pure,
// deterministic projections with a checkpointed cursor per stream.
//
// # Invariants
//
//   - A fold is one transaction: the rows of every event it folds and the
//     cursor of every stream it advances commit together or not at all.
//     After a crash the cursor says exactly what the index holds, and
//     CatchUp continues from cursor+1.
//   - Idempotent: an event at or below its stream's cursor is skipped. A
//     gap (seq > cursor+1) is a *GapError and the fold commits nothing.
//   - Deterministic: a projection depends on the event prefix only. No
//     wall clock (entry times are event times), no map order (aggregates
//     are written in sorted key order), no randomness (entry ids are
//     EntryID(stream, seq, pos)).
//   - Streams commute: folding streams in any order, in any split into
//     calls, gives the same Dump. This holds because nothing a stream's
//     events write depends on another stream: sessions are keyed by
//     (session, stream), and memory ops only touch entries whose scope is
//     the event's own stream. New projections must keep that rule.
//
// # What each event type folds into
//
//	every event          events row; its session's row in sessions
//	session/start        sessions: cwd (overrides), origin, parent, agent_preset, started_at
//	session/end          sessions: ended_at
//	user/message         episodes + episodes_fts; sessions: user_turns, user_chars (not when injected)
//	assistant/message,
//	tool/result,
//	compaction/summary   episodes + episodes_fts (data.text)
//	task/end             episodes + episodes_fts (request + "\n" + result)
//	memory/remember      entries (id EntryID(stream, seq, 0), scope = stream),
//	                     entry_versions v1 "add", entries_fts
//	memory/forget        entries: status forgotten, version+1; entry_versions "forget"
//	memory/ops           entries and entry_versions per op (ops.go): add, revise
//	                     (version+1, the previous kept), supersede (old superseded,
//	                     new active, both versions recorded), conflict (a group id
//	                     ConflictGroupID(stream, seq, op)), forget; a group left
//	                     with one contender is resolved back to active; the
//	                     evidence ops (evidence.go): confidence (entries, version
//	                     "confidence"), alias (aliases), procedure (procedures,
//	                     procedure_versions), each only in the event's own stream
//	memory/shown         shown (session, stream, entry_id): count, last seq
//	scope/register       scopes: the workspace's directory (data.dir), over its first cwd
//	scope/archive        archived_scopes (a workspace stream only): its files move to archived/
//	scope/restore        archived_scopes row deleted: its files move back to scopes/
//	maintenance/rotate   day_rotation: the cut-off day, the greatest data.before folded (a
//	                     maximum, so streams commute); the days before it are queued, and
//	                     their files move to sessions/archive/ (rotation.go)
//	anything else        events row only (scope/purge too: a record, see Purge)
//
// Data that does not decode, or lacks what a projection needs (a
// remember without content, a forget of an unknown id), records nothing
// beyond the events row: the log is what it is, and replay must not stop
// on it. Only database errors fail a fold.
//
// # Files
//
// fold.go runs a fold (transaction, cursors, the preparing goroutine),
// and dispatches each event by type; episodes.go, sessions.go,
// entries.go, ops.go and shown.go hold one projection each; files.go
// and render.go write the Markdown projections after a commit. Every
// statement is a named method of sqlstore: the fold's of
// sqlstore.FoldTx, the renderers' reads of sqlstore.Reader.
//
// # Markdown files
//
// render.go renders, files.go writes. With Projector.Root set, Fold
// writes after its commit the files its events changed (ARCHITECTURE §2,
// §4), each with markdown.WriteFileAtomic, and records path, sha256,
// bytes and the events it reflects in the files table:
//
//	global.md            global entries of type preference, rule, decision
//	knowledge/<file>.md  the other global entries (fact, architecture, procedure, fix), by
//	                     topic: the entry's first tag, else its type; file = markdown.TopicFile
//	                     (topics with the same file share it; it is titled by the least name);
//	                     a file whose topic has no active or conflict entry left is removed
//	index.md             each topic → its file, then one line per global entry
//	scopes/ws-<id>/      memory_summary.md (the workspace's entries, ≤ 3000 bytes),
//	                     scope.json {"key","cwd"} (cwd: the dir of the stream's scope/register
//	                     event, else the first cwd the stream carried),
//	                     summary_history/<seq, 20 digits>.md: the newest 10 versions of the
//	                     summary, a version being the summary as of a memory event (memory/
//	                     except memory/shown) whose text differs from the version before
//	archived/ws-<id>/    what scopes/ws-<id>/ holds, for an archived workspace (scopes.go)
//	sessions/<day>.md    compaction/summary (block id compactionId) and session/end with a
//	                     "summary" (block id the session) of that day — the date in the
//	                     event's own offset — in (event time, stream, seq) order;
//	                     sessions/archive/<day>.md instead for a day before the rotation
//	                     cut-off (DayFile), the copy on the other side removed
//
// When: the global layer after a fold that folded the global stream's
// first event or a memory event of it; a workspace's files after a fold
// that folded its stream's first event, a memory event of it or its
// first cwd; a day after a fold of one of its blocks. These are exactly
// the files Refresh renders from the index, so a live root and a
// rebuild (which ends with Refresh) hold the same set of files. Summary
// versions are decided inside the transaction, right after their event,
// for every memory event, and kept in summary_versions (the newest 10)
// when the text changed, so the set kept never depends on how the log
// was split into folds. A remember that adds an entry is a version
// without rendering (the count it changes is in the text); one that a
// fold's later remembers push out of the newest 10 is not rendered at
// all (fileTrack.plan), so a rebuild renders about 10 per stream and fold. Every file and every files row is a function of
// the event prefix: replay writes the same bytes.
//
// A fold does not write the files: it queues their groups in
// projection_queue in its own transaction, and WriteQueued (at once,
// or in the background with Defer) renders each queued group from one
// snapshot of the index and writes it (queue.go). A summary render reads
// the top of the ranking through the entries_summary index and the
// count from entry_counts, so it costs the same at 300 entries and at
// 30,000.
//
// A file whose bytes on disk are not what the files table says dshmem
// wrote is a hand edit not yet captured: it is never overwritten (Held
// is told); sync captures it into the log and calls Rewrite. file_texts
// keeps the last bytes written of global.md and knowledge/*.md, the
// files sync reads back, so an edit is compared with what the person saw.
//
// # Speed
//
// A fold's statements are prepared once per call from copies prepared
// on the pool, and run without a cancellable context (the driver would
// start a goroutine per statement): see sqlstore.FoldTx. The fold
// decodes and tokenizes the events on a second goroutine, ahead of the
// inserts and in order. FTS5 inserting ~77 distinct terms per message
// dominates what remains; see BenchmarkFold.
package projector
