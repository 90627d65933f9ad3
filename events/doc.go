// Package events reads and writes zstd-framed JSONL event segments.
//
// It holds the event envelope and vocabulary (envelope.go) and the segment
// log: the writer with group commit (writer.go), the streaming reader
// (reader.go), recovery, the read-only open, Verify and Repair (log.go,
// segment.go, repair.go) and the file-system seam used to inject faults
// (fs.go).
//
// # Files
//
//	<dir>/<stream>/<first seq, 20 digits>.jsonl.zst   a segment
//	<dir>/<stream>/<segment>.broken[.N]                 copy of a segment whose torn tail was cut off
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
//	8   1  kind: 1 batch header, 2 seal
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
// # Invariants
//
//   - Nothing is acknowledged before its bytes are fsynced (and, for a new
//     segment or stream, its directory). A batch header and its frame are
//     written in one write; a group of concurrent Appends is one write and
//     one fsync (one more of each for every segment sealed on the way).
//   - Seqs of a stream are contiguous and the events of one Append call are
//     contiguous and in order. Each frame holds at most Options.MaxBatch
//     events and about 8 MiB of JSON.
//   - The first write or sync error of a stream is sticky: every waiter of
//     that group and every later Append fails with ErrStreamFailed and the
//     cause, until the log is reopened (which cuts off any torn tail).
//   - A segment that reached Options.SegmentSize gets a seal record and is
//     never written again. Only the last segment of a stream is unsealed.
//   - No event is decoded before its frame's checksum was verified: the
//     reader takes the frame's length from the batch header, reads the whole
//     frame, checks its sha256, then decodes it with DecodeAll (which checks
//     XXH64 too). The streaming zstd decoder is never used: it hands out
//     blocks of a damaged frame before it notices the damage.
//   - A torn tail — the input ends inside a batch, or the last batch is
//     damaged with no valid frame after it — can only come from a crash
//     during the last write. In the last segment of a stream it is cut off
//     on open (after a copy to .broken) and reported by Log.Repairs. A
//     damaged frame followed by a valid one, or any damage in a sealed
//     segment, is corruption: reported as a *CorruptError with segment and
//     offset, never skipped or truncated; OpenLog refuses a log with
//     corruption it reads.
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
// Corruption it meets is refused, as by OpenLog.
package events
