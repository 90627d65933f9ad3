// Package reader opens a memory root for reading only: the log with
// events.OpenLogReadOnly and the index read-only, beside a live writer.
//
// Opening takes no lock and writes, creates and repairs nothing in the
// root (SQLite may add its own empty index.db-wal and index.db-shm, as
// any reader of a WAL database does when no writer has them open), so the
// read commands run beside a live 'dshmem serve'. What the index had
// folded (its cursors) is read before the log is opened: a writer folds
// only what it fsynced, so the log holds at least that much, and the
// log's open takes those batches by their headers (events.Options.Trusted).
//
// A torn tail is read up to its last whole batch and left on disk; it,
// and an index that has not folded the whole log or holds more than it,
// are what Notes tells the user.
package reader
