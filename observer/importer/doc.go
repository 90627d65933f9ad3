// Package importer brings what users already have into the log: DSH host
// session logs (ImportDSH, and the live Watcher of the host's sessions
// root) and the Markdown and JSON trees of the legacy memory plugins
// (ImportLegacy, legacy.go describes the shapes).
//
// Every import goes through the engine's ordinary intake, in batches, and
// is idempotent: event ids derive from the host's session and sequence
// (dsh:<session>:<seq>) or from the legacy file and block, so running an
// import again, or a watcher restart that reads a few frames twice,
// appends nothing new. The importers only read the files they import.
//
// Imports: importer → observer, observer/dsh, observer/metrics, events.
package importer
