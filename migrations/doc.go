// Package migrations holds the goose SQL migrations of the SQLite index,
// embedded so that the binary carries its own schema.
//
// The index is derived: every row can be rebuilt from the event log with
// `dshmem replay`. A migration may therefore drop and rebuild derived
// tables freely, but it must keep the cursors table consistent with what
// it leaves behind: a migration that adds or removes a projection folded
// from events (00002_entries does) empties every derived table and the
// cursors in both directions, so the projector folds every stream again
// from seq 1. Otherwise an Up would leave the new table empty behind a
// cursor that says everything was folded.
//
// Rules for a new migration:
//   - name it NNNNN_what.sql with the next number; never edit one that has
//     shipped;
//   - every Up has a Down that restores the previous schema exactly
//     (the round-trip test compares sqlite_schema before and after);
//   - CREATE TRIGGER and other statements with inner semicolons go
//     between `-- +goose StatementBegin` and `-- +goose StatementEnd`.
package migrations

import "embed"

// FS holds the *.sql migrations at its root, in goose's layout.
//
//go:embed *.sql
var FS embed.FS
