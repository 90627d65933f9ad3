// Package replay rebuilds the index and every Markdown projection from
// the event log, restores one projection as it was at a seq or a time,
// and verifies that a live root equals its replay byte for byte.
//
// The log is the only source of truth (ARCHITECTURE §4): the projector
// is a pure function of the event prefix, so
//
//	Rebuild(log) into an empty directory  ==  the live root
//
// for every projection file and for projector.Dump of the index,
// whatever order the streams are folded in and however the log is split
// into folds. Verify checks exactly that and names each file that
// differs: a damaged sessions/DAY.md (the incident of a file cut to its
// first 16 lines), a hand edit not yet synced, a file that is missing.
//
// Nothing here writes to the root it reads: Rebuild writes into a new
// directory, Verify rebuilds into a temporary one, Restore folds into a
// temporary index. So they run on a log opened with
// events.OpenLogReadOnly and an index opened read-only, beside the
// root's writer. Verify compares the root with the replay of what the
// live index had folded (its cursors, read before the log was opened):
// a stream the index has not folded to the end (Behind) is the writer's
// work in flight, or the tail a crash left, and is not replayed; one it
// folded past the log's end is a difference.
//
// # Restore
//
// Restore renders one file as it was at a point without rebuilding
// everything:
//
//	global.md, index.md, knowledge/*.md     the global stream up to --at SEQ
//	scopes/ws-<id>/memory_summary.md,
//	scopes/ws-<id>/scope.json               that workspace's stream up to --at SEQ
//	scopes/ws-<id>/summary_history/<N>.md   the workspace's stream up to seq N
//	sessions/YYYY-MM-DD.md                  every block of that day with event time ≤ --at TIME
//
// For a stream file it reads that one stream from seq 1 and stops at the
// seq asked; only the events that can change entries (memory/ except
// memory/shown) and the first event carrying a cwd are folded, into a
// temporary index, each run of them behind a cursor set to the seq before
// it, so entry ids and versions come out exactly as in the live fold. A
// sessions file is fed by several streams, so its point is a time (RFC
// 3339; blocks are compared by instant). The live index, when given,
// says which of the events it folded hold that day's blocks, and only
// those stretches of the streams are read, with whatever it has not
// folded yet; without it every stream is read whole.
//
// # Paths
//
// ValidatePath takes a path as a person types it, relative to the root,
// and refuses an absolute path, any ".." element, a path that leaves the
// root through a symlink, and any path that is not a projection dshmem
// writes (projector.ParsePath), each with an error that says so.
package replay
