// Package payload defines the data of every event type of the vocabulary,
// the entry types, statuses and op kinds: the wire format of
// events.Envelope.Data, and the one place where older shapes are read.
//
// Producers build a payload struct and encode it with Marshal; folds
// decode with Decode or Unmarshal and see only today's shape. The
// envelope keeps its data as stored (compacted as sent, key order and
// unknown fields kept): what is typed is the reading, never the log. No
// other package declares a struct or a map for an event's data.
//
// # Shapes (vocabulary v1)
//
// Fields marked * are the ones a fold depends on: data that is not a JSON
// object, or one of these of another shape, does not decode (Unmarshal
// returns an error, with every field that did decode set). Every other
// field is best effort: a value of another shape leaves it zero and is no
// error, so metadata that a host writes its own way never costs a
// projection anything.
//
//	session/start       origin ("top"|"subagent"), parent, agentPreset, delegationDepth, hostCwd   (all best effort)
//	session/end         summary*, reason
//	user/message        text*, injected*, source {kind, form, plugin}, messageId
//	assistant/message   text*, injected*, turn, step
//	tool/call           name, args (any JSON), callId, turn, step
//	tool/result         text*, injected*, name, ok, error, callId, turn, step
//	compaction/summary  compactionId*, text*, injected, legacySource
//	turn/end            reason, error, turn
//	task/end            request*, result*, taskId, status
//	memory/remember     content*, title*, type*, description*, terms* (one string), tags, importance, legacy {…}
//	memory/forget       entryId*, reason*
//	memory/ops          checkpoint*, ops* (array), session, from, to, distiller, model
//	  each op           op*, targetId*, evidenceEventIds*, type*, title*, description*, content*,
//	                    reason*, provenance*, oldQuote, newQuote, tags, terms, importance, confidence,
//	                    delta, alias, expansion, procedure {id, stage, trigger, preconditions, steps,
//	                    check, sessions, failures, confirmed}   (the last four: evidence ops only)
//	memory/shown        entries*, session*, mode
//	file/edit           path, content
//	scope/register      dir*
//	scope/purge         key*
//	scope/archive, scope/restore, maintenance/rotate, maintenance/backup   no data
//
// Which fields intake requires of each type is observer.Validate's
// concern; this package reads whatever a log holds.
//
// # Older shapes (upcast.go)
//
// A log must stay readable forever. These shapes have been written, or
// read by the folds, and are turned into today's:
//
//   - importance: any JSON number, clamped to 0–3 and truncated
//     (ClampImportance): `import legacy` wrote the legacy store's number,
//     a float such as 2.5 (today: 2). A value that is not a number is
//     absent (the default, 1). null is 0: the folds have always read it
//     so, and replay must give what they gave.
//   - confidence: any JSON number, clamped to 0–1; otherwise as importance.
//   - tags (and an op's terms) that are not an array of strings: present
//     but empty, which is what a revise then writes; the strings of a
//     mixed array are kept.
//   - an op's terms given as one string: the list of that string.
//   - an op that does not decode: the zero Op in its place (no op name,
//     which no fold applies), so later ops keep their positions.
//
// Envelope versions are upcast by events.Unmarshal; a payload has no
// version of its own. A new shape gets a case here, a line in
// testdata/payload/older.jsonl and a test that reads it.
//
// # Text fields (text.go)
//
// RewriteText applies a function to the free-text fields of an event's
// data — a message's text, an entry's content, title, description and
// terms, an op's quotes and reason, a file edit's content, a tool call's
// arguments — and to nothing else (no op name, id, type or number),
// keeping the object's other bytes. `dshmem scrub` turns a forgotten
// entry's text into ScrubbedText with it, so a scrubbed event still
// decodes and every fold makes the same of it but the text.
//
// # Invariants
//
//   - Decoding is deterministic and never fails a fold: a fold that
//     cannot use an event's data records nothing for it.
//   - Marshal(Decode(x)) of data a producer wrote with this package is x
//     again, byte for byte: field order is the producers' order.
//   - Names, types and meanings of fields are part of the on-disk format;
//     a field is never renamed or retyped, only added.
package payload
