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
// Beside the distiller's answer, the same memory/ops event carries the
// evidence ops of the range (evidence.go, procedure.go; issue 16):
// confidence moved by tool results after an entry was shown, by the
// user's confirmations and corrections and by reuse in another session;
// aliases the user's own words taught; and learned procedures' stage
// changes (P0 observed … P4 deprecated). They are derived from the log
// up to the range's end with fixed rules, so the log holds them and
// replay applies them without recomputing anything. Confidence ops for
// global entries shown in a workspace session go in a memory/ops event
// of the global stream instead, committed just before (global.go).
//
// Imports: checkpoint → observer, observer/distill, sqlstore, events.
package checkpoint
