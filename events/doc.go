// Package events reads and writes zstd-framed JSONL event segments.
//
// It holds the event envelope and vocabulary (envelope.go) and the segment
// log: the writer with group commit (writer.go), the streaming reader
// (reader.go), recovery, the read-only open, Verify and Repair (log.go,
// segment.go, repair.go), the in-place rewrite of sealed segments
// (rewrite.go), the quarantine of a damaged stream and its salvage
// (quarantine.go, salvage.go, salvage_journal.go) and the file-system
// seam used to inject faults (fs.go).
//
// # Files
//
//	<dir>/<stream>/<first seq, 20 digits>.jsonl.zst   a segment
//	<dir>/<stream>/<segment>.broken[.N]                 copy of a segment whose torn tail was cut off
//	<dir>/<stream>/<segment>.rewrite                    a segment being rewritten (Rewrite); removed on open
//	<dir>/<stream>/quarantine.json                      the stream is damaged: read-only until Salvage
//	<quarantine>/<stream>.<time>/                       a salvage: salvage.json (its journal), damaged/ (the
//	                                                    stream's directory as it was, never deleted), new/
//
// A stream is an independent sequence of events with its own seqs, which
// start at 1 and are contiguous across its segments. A segment is named
// after the seq of its first event.
//
// # Segment layout
//
// A segment is a concatenation of frames. Standard zstd frames (magic
// 0xFD2FB528) always carry zstd's content checksum (XXH64), so stock tools
// print and check them: `zstd -dc segment` prints the header line and every
// event, one JSON object per line. Our framing lives in zstd skippable
// frames, which stock decoders skip:
//
//	stream header   zstd frame: one line {"type":"stream","v":1,"stream":S,"firstSeq":N,"prev":HEX}\n
//	batch 1         record frame (kind 1) + zstd frame: Count lines, one envelope each, each ending in \n
//	batch 2         …
//	seal            record frame (kind 2), only in a sealed segment, always last
//
// The header's prev is the hex Hash of the last batch of the previous
// segment (64 zeros in the first segment), so the hash chain crosses
// segments. The header and the first batch are written together.
//
// A record frame is 96 bytes, all integers little endian:
//
//	0   4  magic 0x184D2A5D (skippable frame, our nibble D)
//	4   4  payload length = 88
//	8   1  kind: 1 batch header, 2 seal, 3 gap (written only by Salvage)
//	9   1  record version = 1
//	10  2  reserved, zero
//	12  8  first seq      (seal: first seq of the segment)
//	20  4  count          (seal: events in the segment)
//	24  4  length of the following zstd frame in bytes (seal: 0)
//	28 32  checksum: sha256 of the following zstd frame's bytes (seal: zero)
//	60 32  prev: Hash of the previous batch of the stream (seal: Hash of the segment's last batch)
//	92  4  CRC-32C (Castagnoli) of bytes 8..91
//
// The Hash of a batch is sha256 of its record bytes 8..91 (kind through
// prev). It covers the frame checksum and the previous hash, so the chain
// of hashes covers every byte of every event: a missing, duplicated or
// reordered batch breaks either the seq order or the chain, and Verify
// reports it with the segment and byte offset.
//
// A scrubbed batch (Rewrite) has a record of version 2, 132 bytes:
//
//	0   4  magic 0x184D2A5D
//	4   4  payload length = 124
//	8   1  kind: 1 batch header
//	9   1  record version = 2
//	10 82  as in version 1, describing the rewritten frame: first seq, count,
//	       length and sha256 of the following zstd frame, prev
//	92  4  original length: of the frame as first written
//	96 32  original checksum: sha256 of the frame as first written
//	128 4  CRC-32C of bytes 8..127
//
// Its Hash is that of the version 1 record the batch was appended with —
// sha256 of kind 1, version 1, first seq, count, original length,
// original checksum and prev — so the next batch's prev, the next
// segment's header and the seal, which name it, stay valid. Its new
// frame is checked by its checksum like any other; the bytes it was
// first written with are gone, by design, and Verify lists its seqs as
// scrubbed (Checked.Scrubbed). Stock zstd skips a skippable frame of any
// length, so `zstd -dc` still prints every line.
//
// A gap record (kind 3, version 1, 96 bytes, the layout above) stands
// for seqs that Salvage could not keep: first seq and count name them,
// length is 0 and no frame follows; the checksum field holds the hash
// the chain resumes at (the prev of the batch after the gap) and prev
// the hash before it. The chain is checked through it like through a
// batch: its first seq must follow, its prev must match, and the next
// record must name its resume hash. So every whole batch after damage
// keeps its bytes and its own hash, and the seqs stay contiguous, lost
// ones included: they are never given to other events. Verify lists
// them (Checked.Lost); a fold steps over them (Log.Lost). A seal's
// count is the seqs its segment spans, gaps included.
//
// # Quarantine and salvage
//
// Damage in one stream quarantines that stream, never the log: OpenLog
// and OpenLogReadOnly open every other stream as usual; the damaged one
// is read up to the last whole batch before the damage (what open met:
// in the last segment, or a sealed segment whose header or seal does
// not fit), nothing of it is cut or rewritten, and appends to it fail
// with a *QuarantinedError (ErrQuarantined) naming the segment, the
// offset and `dshmem salvage STREAM`. Damage open does not read (a
// sealed segment trusted by its seal, a trusted batch's frame) is found
// by Log.Verify, which quarantines the stream too, and by every read of
// it. A writable log records the quarantine in quarantine.json, so the
// next open and the read-only opens know it.
//
// Salvage reads every byte of every segment of the stream and keeps
// every whole batch — its frame matching its checksum, every line an
// envelope of the stream with its seq — wherever it lies, before and
// after the damage, in seq order, each linked to the one before it (a
// batch in the right place whose prev does not fit, spliced in from
// elsewhere, is not kept). Seqs no kept batch holds become gap records:
// between batches, and at the end up to the highest seq a seal, a
// damaged batch's intact header or SalvageOptions.KnownLast (the
// index's cursor) shows. The steps, and how a crash between them is
// finished, are in salvage_journal.go: the new chain is written and
// read back in the quarantine directory, a journal is written, then
// two renames put the damaged directory aside and the new one in place.
//
// # Rewriting (scrub)
//
// Log.Rewrite changes the data of some events in place: `dshmem scrub`
// erasing the text of forgotten memory entries. Ids, seqs, types and the
// hash chain stay. The other design — rewrite every segment from the
// first changed one to the end of the stream, with new hashes all the
// way — was not taken: one forgotten entry would cost a rewrite of the
// whole tail of its stream (the active segment included, so the writer
// would have to stop), several files would have to change together
// (a journal to roll a crash forward or back on open), and every
// recorded hash (a backup's manifest, a seal) would change with it.
// With version 2 records a scrub rewrites only the segments that hold a
// changed line, each on its own, and each rewrite is one atomic rename:
//
//  1. The segment is read (every frame checked) and written whole into
//     <segment>.rewrite: unchanged batches byte for byte, each changed
//     batch as a new frame under a version 2 record; then fsynced.
//  2. The new file is read back: every frame, line, seq and the chain,
//     which must end in the same seal as the old one.
//  3. It is renamed over the segment, and the directory fsynced.
//
// A crash before the rename leaves the old segment and a .rewrite file
// (new bytes only), which OpenLog and Rewrite remove; after it, the new
// segment. Both are valid, and no copy of the old bytes is kept (a
// failed step removes the .rewrite file); a .broken copy of a torn tail
// that holds a changed line is rewritten the same way, keeping its whole
// batches and dropping its torn bytes. Only sealed segments are
// rewritten: an active one that holds a changed line is sealed first
// (Log.Seal, through the writer, behind the appends queued before it),
// and appends go on into a new segment. A sealed segment is read to the
// size of the file a reader opened, not the size listed, so a reader
// that listed it before a rename reads the old file or the new one
// whole.
//
// # Invariants
//
//   - Nothing is acknowledged before its bytes are fsynced (and, for a new
//     segment or stream, its directory). A batch header and its frame are
//     written in one write; a group of concurrent Appends is one write and
//     one fsync (one more of each for every segment sealed on the way).
//   - Seqs of a stream are contiguous and the events of one Append call are
//     contiguous and in order. Each frame holds at most Options.MaxBatch
//     events and about 8 MiB of JSON.
//   - A write or sync error keeps nothing of its group: none of it was
//     acknowledged, so what the group wrote is taken back (segments it
//     created removed, the active one cut back to its committed size),
//     and every waiter of the group gets ErrStreamFailed and the cause —
//     an error means the events are not in the log. The error is sticky
//     for Options.RetryAfter: appends are refused, and Log.Degraded
//     names the stream and why. The first append after that makes the
//     writer reopen the stream from disk (recover.go: tail verified
//     against what was committed) and go on; if the cause is still
//     there the stream stays failed for another RetryAfter. Reopening
//     the log does the same at once.
//   - A writer closes its segment file after a second with nothing to
//     write, so idle streams hold no file descriptor and a busy one does
//     not reopen its file for every batch.
//   - A segment that reached Options.SegmentSize (or that Seal sealed)
//     gets a seal record and is never appended to again; Rewrite may
//     replace it whole (see Rewriting). Only the last segment of a
//     stream is unsealed.
//   - No event is decoded before its frame's checksum was verified: the
//     reader takes the frame's length from the batch header, reads the whole
//     frame, checks its sha256, then decodes it with DecodeAll (which checks
//     XXH64 too). The streaming zstd decoder is never used: it hands out
//     blocks of a damaged frame before it notices the damage.
//   - A torn tail — the input ends inside a batch: a record or a frame
//     cut short — can only come from a crash during the last write. In
//     the last segment of a stream it is cut off on open (after a copy to
//     .broken) and reported by Log.Repairs. A whole last batch whose frame
//     does not match its checksum, or a whole record that does not check,
//     is not what a crash leaves (a crash keeps a prefix of the write): it
//     is damage, like a damaged frame followed by a valid one and any
//     damage in a sealed segment — reported as a *CorruptError with
//     segment and offset, never skipped or truncated, and its stream is
//     quarantined (see Quarantine and salvage).
//   - OpenLog does not read every byte: a sealed segment before the last
//     is trusted by its stream header and seal record (checked against
//     the segment before it), and in the last segment the batches at or
//     below Options.Trusted (seqs the index folded, so fsynced) are
//     checked by their batch headers and the hash chain, their data
//     frames skipped (not even read: only the headers are, a window at a
//     time). A crash tears only what came after the last fsync, so
//     nothing a torn-tail repair needs is skipped. Damage in a skipped
//     frame is found by Verify (and Log.Verify, which serve runs in the
//     background) and by every read, which checks each frame's sha256
//     before it decodes a byte of it.
//   - A stream leaves the log only whole, by Log.Drop (drop.go, for a
//     scope purge): its writer is stopped and its segment closed, then
//     its directory is renamed out of the log and the rename fsynced. An
//     Append after it starts a new stream of that name at seq 1.
//
// # Reading beside the writer
//
// OpenLogReadOnly finds the end of each stream the same way, but takes
// no lock, creates nothing and changes nothing: a torn tail stays on
// disk, is reported by Log.TornTails, and the stream ends at its last
// whole batch. It is safe beside a live writer because the writer only
// appends: a segment is read up to the size it had when the directory
// was listed, so a batch being written is at worst a torn tail of that
// snapshot, never damage; a segment after it in the listing was created
// only after the one before it was sealed, so that one's size is final.
// A stream with damage it meets is quarantined, as by OpenLog (in
// memory only: a read-only open writes no marker).
package events
