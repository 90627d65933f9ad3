// Package dsh reads the DSH host's session logs and maps host events to
// dshmem's event vocabulary.
//
// # Files
//
// The host keeps one log per session under $DSH_HOME/sessions:
//
//	<root>/--<projectKey(cwd)>--/<session id>/session.jsonl[.zstd]
//	<root>/--<projectKey(cwd)>--/<session id>/session.vN.jsonl[.zstd]   (format generation N)
//
// FindSessions picks the highest generation per session directory
// (session.jsonl is generation 0; session.N.jsonl, as in the host's test
// snapshots, counts as generation N; at equal generation .zstd wins).
// Files named "<name>--session….jsonl[.zstd]" (the host's flat fixture
// naming) are each a session of their own.
//
// # Byte layout of session.jsonl.zstd
//
// A concatenation of independent zstd frames (RFC 8878). Frame 1 holds only
// the header line; each durable append batch of the host is one more frame.
// Every frame content is whole lines, each ending in '\n'. The host writes
// every frame with the content-checksum flag, no frame content size and a
// 2 MiB window (descriptor byte 0x04, window byte 0x58; see testdata/live):
//
//	magic     4 bytes  28 b5 2f fd
//	FHD       1 byte   FCS flag (2 bits) | single segment | unused | reserved=0 | checksum | dict id flag (2 bits)
//	window    0-1      absent when single segment
//	dict id   0,1,2,4  by dict id flag
//	FCS       0,1,2,4,8 by FCS flag (1 when single segment and FCS flag 0)
//	blocks    3-byte LE header each: bit 0 last, bits 1-2 type (raw, RLE,
//	          compressed, reserved), bits 3-23 size; RLE carries 1 byte,
//	          raw and compressed carry size bytes; size <= 128 KiB
//	checksum  4 bytes  low 32 bits of XXH64 of the content
//
// Skippable frames (magic 0x184D2A5?) are stepped over.
//
// # Invariants
//
//   - No event is decoded from a frame before the whole frame is present and
//     its checksum verified: a frame's end is found from its frame and block
//     headers, then the frame alone goes through zstd DecodeAll. The streaming
//     decoder is never used: it yields blocks of a torn frame before it
//     notices the frame is bad (STACK-NOTES "The log").
//   - A bad or incomplete frame (or JSONL line) with no verifiable frame
//     (line) after it is the tail the host is still writing, or a torn write:
//     ReadFile returns everything before it and reports TornBytes; a Follower
//     waits for it. A bad frame followed by a good one is corruption: a
//     *CorruptError naming the file and byte offset.
//   - Every envelope id is derived from the host's own numbering
//     (dsh:<session id>:<seq>, dsh:<session id>:header,
//     dsh:<session id>:<seq>.<i> for the i-th message spliced into the inbox),
//     so importing the same log again produces the same ids and the engine
//     drops them as duplicates. A Follower resumed at a saved offset replays
//     the log up to that offset without emitting, so it produces exactly the
//     envelopes a reader that never stopped would have produced.
//   - The host writes each user message twice: once when it is spliced into
//     the agent's inbox (agent/inbox/spliced) and again as user/message when
//     a turn consumes it, with the same message id. The first sighting is
//     mapped; the second is counted as skipped. Messages that were spliced but
//     never consumed (a turn that failed) still become user/message.
//   - Text that a plugin or the host put into the conversation (source.kind
//     other than "user" or "coordinator", the per-turn "Current runtime
//     context" snapshot, compaction replacements, goal rounds, recalled
//     memory) is mapped with injected=true: kept as context, never something
//     the user said. So is the tool/result of dshmem's own tools
//     (MemoryTools: memory_search, memory_remember, memory_forget), whose
//     text is memory read back.
//
// dshmem never writes, renames or locks a host log; this package only reads.
// Tests here and elsewhere produce logs framed exactly as the host frames
// them with observer/dsh/dshtest.
package dsh
