// Package backup copies a memory root to a backup directory and back,
// and keeps the root's housekeeping on schedule: backups every seven
// days and the rotation of old session files.
//
// # A backup directory
//
//	<dir>/manifest.json                       what the backup holds (written last, atomically)
//	<dir>/log/<stream>/<segment>.jsonl.zst    copies of the root's segments
//	<dir>/index-<generation, 20 digits>.db    a consistent snapshot of index.db (VACUUM INTO)
//	<dir>/backup.lock                         held by the process writing the backup
//
// The manifest (Manifest) lists every file with its path, size and
// sha256, the last seq of every stream the copied log holds, and the
// cursors of the index snapshot. A directory holds one backup, the
// newest; each run brings it up to the root and leaves it alone when
// nothing changed.
//
// # Invariants
//
//   - The index is snapshotted before the log is: every event the
//     snapshot reflects was fsynced before it was folded, so the copied
//     log is at least as long as what the snapshot reflects (its cursors
//     never pass the manifest's streams). Restore opens the root, whose
//     catch-up folds the rest.
//   - A segment is copied as far as it is committed (events.Log.Snapshot):
//     whole batches only, whatever a writer appends meanwhile. A segment
//     whose sha256 the manifest already holds is not copied again; a
//     sealed one whose size and modification time are those recorded is
//     not even read again (a sealed segment is never written, and one a
//     scrub rewrites gets a new file).
//   - Nothing a backup writes replaces a file before its copy is whole:
//     each copy goes to a temporary name, is fsynced, and is renamed
//     over the old one only when every copy is done; manifest.json is
//     renamed in last. Files the new manifest no longer names (a purged
//     scope's segments, the previous index snapshot) are removed after
//     it. An interrupted run leaves temporary files, which the next run
//     removes, and at worst copies renamed into place before the new
//     manifest was: a segment only grows, so such a copy is the recorded
//     bytes and more, and a new segment is one the manifest does not
//     name. Verify notes both, Restore reads the recorded bytes, the next
//     run records the rest. (Only a segment the root rewrote, a scrub's,
//     caught between its rename and the manifest, no longer matches:
//     Verify reports it until the next run.)
//   - A directory holds one root's backup: a run refuses one whose
//     streams are not this root's as they were (the same first event and
//     the same event at the seq its index snapshot reflects, and at
//     least its last seq; or a purge of the stream
//     recorded here), since bringing it up to this root would remove
//     what only it holds (checkOwner).
//   - Each backup appends a maintenance/backup event to the global
//     stream saying what it copied; its time is when the backup was
//     made, and "backup due" counts from it. When nothing but those
//     events came since the last backup, nothing is copied: the backup
//     already holds everything else.
//   - Restore never writes into a root that holds anything; it checks
//     every copied byte against the manifest, then opens the root (the
//     index from the snapshot caught up from the log, or rebuilt from
//     the log when the snapshot is unusable) and writes the projections.
//
// # Rotation
//
// Rotate appends a maintenance/rotate event naming the cut-off day
// (thirty days before now); the projector's fold moves the day files
// before it into sessions/archive/, so replay moves the same files.
package backup
