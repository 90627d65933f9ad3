// Package handedit reads hand edits of the Markdown projections back into
// the log (Sync): an edited global.md or knowledge file becomes a
// file/edit event and the memory/ops that say what changed; other edited
// projections are logged and rendered again; a damaged file is kept aside
// and rendered again.
//
// A file is compared with the bytes the index says dshmem last wrote
// (their hash is recorded), while intake is held (observer.Engine.Settled)
// so the index equals the log. Event ids derive from the path and the
// hashes of the written and the edited bytes, so a sync interrupted after
// logging and run again logs nothing twice.
//
// Imports: handedit → observer, projector, markdown, events.
package handedit
