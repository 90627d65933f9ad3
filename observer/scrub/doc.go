// Package scrub erases the text of forgotten memory entries from a root:
// `dshmem scrub` and POST /v1/scrub.
//
// Forgetting hides an entry at once (a memory/forget event), but its
// words stay in the events that wrote it, in index.db and in old
// summary versions. Run, in the root's one writer (the CLI's engine or
// the server's):
//
//  1. plans from the index: every version's title, description, content
//     and terms of every forgotten entry; the events that wrote them; and
//     with Sources the events they were learnt from (provenance ids);
//  2. writes the plan to JournalFile (fsynced) before touching the log
//     (it holds the texts to erase, which are on disk anyway until the
//     scrub is done, and is removed with them);
//  3. rewrites each stream's log (events.Log.Rewrite: sealed segments
//     only, one atomic rename each, seqs, ids and hash chain kept): in
//     the entry's own events its text fields become Marker whole, in any
//     other text of its stream each of its texts of MinNeedleRunes or
//     more is replaced by Marker — but not in the text of an entry that
//     is not forgotten; with Sources the source events' text becomes
//     Marker whole. Only text fields change
//     (payload.RewriteText), never an op name, target, type or id;
//  4. rebuilds the index and every projection from the rewritten log
//     (replay.Rebuild) in a directory of the root, and, with intake
//     held, folds what was appended meanwhile, puts the rebuilt index in
//     place of the live one (sqlstore.Store.ReplaceWith: SQLite's backup
//     API, one transaction) and its files in place of the live ones,
//     then VACUUMs the index and truncates its WAL;
//  5. verifies the log and removes the journal.
//
// When nothing of the log changes (the entries were scrubbed before) the
// index and files, rebuilt from this log then, are left as they are.
//
// A crash at any point leaves a valid root: the log verifies (each
// segment is old or new), the index is the old one or the rebuilt one.
// The next Run finds the journal, merges its plan (the index it plans
// from may have lost texts already scrubbed from the log) and finishes.
// The journal also records the hashes of the projection files as they
// were before the index was replaced, so that a crash between the index
// and the files is not taken for hand edits.
//
// # What stays the same
//
// The status of every entry that is not forgotten: the folds never check
// a supersede's quotes (the distiller's validation did, before the ops
// were written), a scrubbed content or title is never empty, and no
// field a fold decides on is touched. A projection holding a hand edit
// not yet synced is refused (ErrHandEdit): the rebuild would overwrite it.
//
// # What it does not reach
//
// Copies outside the root (backups) and bytes a file system keeps of
// deleted or overwritten blocks. A text under MinNeedleRunes is erased
// only where it is known to be the entry's. Without Sources a message
// keeps its words other than the entry's own texts.
package scrub
