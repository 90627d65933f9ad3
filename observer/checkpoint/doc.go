// Package checkpoint derives the pending work of every session from the
// log, decides when a session is due (Due: user turns, characters, idle
// time, task/end, compaction/summary, session/end; ARCHITECTURE §7) and
// commits a distiller's ops for a claimed range (Run).
//
// Pending work is derived from the index alone (sessions, events and
// the memory/ops events that record each claim), so a restart loses
// nothing and no state file is kept. A claim is read between two intake
// calls (observer.Engine.Settled) and its ops are written as one
// memory/ops event whose id names the range, so two checkpoints racing
// for a range commit once. A distiller error writes nothing: the range
// stays pending and is tried again.
//
// Imports: checkpoint → observer, observer/distill, sqlstore, events.
package checkpoint
