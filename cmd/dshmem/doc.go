// Command dshmem is the long-term memory engine for LLM coding agents:
// an append-only event log, a SQLite index and Markdown projections
// that can all be rebuilt from the log.
package main
