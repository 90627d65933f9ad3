package events

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// cleanBatches lists every batch of a clean stream, from its segments,
// by the reader: what a salvage must keep unless damage hit it.
func cleanBatches(t *testing.T, dir, stream string) (segs []string, batches [][]Batch) {
	t.Helper()
	segs = segmentPaths(t, dir, stream)
	for _, s := range segs {
		batches = append(batches, readBatches(t, s))
	}
	return segs, batches
}

// TestSalvage flips one byte at many offsets (seeded) of a sealed and of
// the active segment, and checks each time: the stream is quarantined,
// Salvage keeps every batch the flip did not hit, reports exactly the
// seqs of the batch it hit (none for a stream header or a seal), moves
// the damaged segments aside byte for byte, and leaves a log that
// verifies, is not quarantined, reads every kept event and takes
// appends after the lost seqs.
func TestSalvage(t *testing.T) {
	opts := Options{SegmentSize: 700}
	clean, all := writeBatches(t, opts, 3, 2, 4, 3, 2, 3, 4, 2, 3, 3)
	segs, batches := cleanBatches(t, clean, "global")
	require.GreaterOrEqual(t, len(segs), 3, "want sealed segments and an active one")
	last := uint64(len(all))
	rng := rand.New(rand.NewPCG(12, 2))
	for _, target := range []int{0, len(segs) - 1} { // a sealed segment, the active one
		orig, err := os.ReadFile(segs[target])
		require.NoError(t, err)
		for range 45 {
			at := rng.IntN(len(orig))
			// What the flip hits, from the clean copy: the batch whose
			// record or frame holds the byte, else nothing (the stream
			// header or the seal).
			lost := []SeqRange{}
			for _, b := range batches[target] {
				if int64(at) >= b.Offset && int64(at) < b.End {
					lost = []SeqRange{{b.Header.FirstSeq, b.Header.LastSeq()}}
				}
			}
			dir := t.TempDir()
			copyDir(t, clean, dir)
			seg := filepath.Join(dir, "global", filepath.Base(segs[target]))
			damaged := bytes.Clone(orig)
			damaged[at] ^= 0x20
			require.NoError(t, os.WriteFile(seg, damaged, 0o644))

			// The damage is found by a full read, and quarantines.
			l, err := OpenLog(dir, Options{FS: noSyncFS{}})
			require.NoError(t, err, "flip at %s:%d: OpenLog", seg, at)
			_, _, err = l.Verify(context.Background())
			require.NoError(t, err)
			_, ok := l.QuarantinedStream("global")
			require.True(t, ok, "flip at %s:%d: not quarantined", seg, at)
			_, err = l.Append(context.Background(), "global", testEvents(900, 1))
			require.ErrorIs(t, err, ErrQuarantined, "flip at %s:%d", seg, at)
			require.NoError(t, l.Close())

			q := filepath.Join(dir, "..", "quarantine-"+filepath.Base(dir))
			rep, err := Salvage(dir, q, "global", SalvageOptions{SegmentSize: 700, KnownLast: last})
			require.NoError(t, err, "flip at %s:%d: Salvage", seg, at)
			require.Equal(t, lost, rep.Lost, "flip at %s:%d: lost seqs", seg, at)
			require.Equal(t, last, rep.Last)
			moved, err := os.ReadFile(filepath.Join(rep.MovedTo, filepath.Base(seg)))
			require.NoError(t, err, "the damaged segment is not kept aside")
			require.Equal(t, damaged, moved, "the damaged segment was changed")

			problems, checked, err := VerifyCounted(dir)
			require.NoError(t, err)
			require.Empty(t, problems, "flip at %s:%d: Verify after salvage", seg, at)
			require.Equal(t, last, checked.Events)
			l, err = OpenLog(dir, Options{FS: noSyncFS{}})
			require.NoError(t, err)
			_, ok = l.QuarantinedStream("global")
			require.False(t, ok, "still quarantined after salvage")
			var want []Envelope
			for _, e := range all {
				if len(lost) == 0 || e.Seq < lost[0].First || e.Seq > lost[0].Last {
					want = append(want, e)
				}
			}
			checkEvents(t, scanAll(t, l, "global", 1), want)
			got := mustAppend(t, l, "global", testEvents(900, 1))
			require.Equal(t, last+1, got[0].Seq)
			require.NoError(t, l.Close())
			p, err := Verify(dir)
			require.NoError(t, err)
			require.Empty(t, p, "Verify after an append to the salvaged stream")
		}
	}
}

func TestSalvageRefuses(t *testing.T) {
	t.Run("ErrNotDamaged", func(t *testing.T) {
		dir, _ := writeBatches(t, Options{}, 3, 3)
		seg := segmentPaths(t, dir, "global")[0]
		before, _ := os.ReadFile(seg)
		q := filepath.Join(t.TempDir(), "quarantine")
		_, err := Salvage(dir, q, "global", SalvageOptions{})
		require.ErrorIs(t, err, ErrNotDamaged)
		require.Contains(t, err.Error(), "nothing was changed")
		after, _ := os.ReadFile(seg)
		require.Equal(t, before, after)
		_, err = os.Stat(q)
		require.True(t, errors.Is(err, os.ErrNotExist), "a quarantine directory was made: %v", err)
	})
	t.Run("DryRun", func(t *testing.T) {
		dir, _ := writeBatches(t, Options{}, 3, 3, 3)
		seg := segmentPaths(t, dir, "global")[0]
		bs := readBatches(t, seg)
		b, _ := os.ReadFile(seg)
		b[bs[1].Offset+recordFrameSize+2] ^= 1
		os.WriteFile(seg, b, 0o644)
		q := filepath.Join(t.TempDir(), "quarantine")
		rep, err := Salvage(dir, q, "global", SalvageOptions{DryRun: true})
		require.NoError(t, err)
		require.Equal(t, []SeqRange{{4, 6}}, rep.Lost)
		after, _ := os.ReadFile(seg)
		require.Equal(t, b, after)
		_, err = os.Stat(q)
		require.True(t, errors.Is(err, os.ErrNotExist), "a dry run made %s", q)
	})
}

// TestDropQuarantined: a quarantined stream can be dropped (a scope
// purge) instead of salvaged; a new stream of that name takes appends.
func TestDropQuarantined(t *testing.T) {
	dir, _ := writeBatches(t, Options{}, 3, 3, 3)
	seg := segmentPaths(t, dir, "global")[0]
	bs := readBatches(t, seg)
	b, _ := os.ReadFile(seg)
	b[bs[1].Offset+20] ^= 1
	require.NoError(t, os.WriteFile(seg, b, 0o644))
	l := openLog(t, dir, Options{})
	defer l.Close()
	_, ok := l.QuarantinedStream("global")
	require.True(t, ok)
	require.NoError(t, l.Drop("global", filepath.Join(t.TempDir(), "trash")))
	_, ok = l.QuarantinedStream("global")
	require.False(t, ok, "the quarantine outlived its stream")
	got := mustAppend(t, l, "global", testEvents(0, 1))
	require.EqualValues(t, 1, got[0].Seq)
}

// FuzzSalvageRecords: Salvage's scan of a damaged segment's raw bytes
// never panics and keeps only what is whole: each batch it keeps lies in
// the input and its frame matches its checksum; anything else is a gap.
func FuzzSalvageRecords(f *testing.F) {
	segmentSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		items, _ := wholeRecords(data, "global")
		for _, it := range items {
			if it.raw == nil {
				if !it.h.Gap {
					t.Fatalf("an item with no bytes that is not a gap: %+v", it.h)
				}
				continue
			}
			if !bytes.Contains(data, it.raw) {
				t.Fatalf("kept bytes that are not in the input")
			}
			if n := it.h.recordFrameLen(); sha256.Sum256(it.raw[n:]) != it.h.Checksum {
				t.Fatalf("kept a batch whose frame does not match its checksum: %+v", it.h)
			}
		}
	})
}

// TestQuarantineMarker: damage that open does not read (a frame in a
// sealed segment, trusted by its seal) is found by Log.Verify, which
// quarantines the stream and records it, so the next open — for writing
// or read-only — knows it without reading the frame.
// damagedSealed writes six batches of the global stream over sealed
// segments and flips a byte in the frame of the first segment's second
// batch, which open trusts by the seal.
func damagedSealed(t *testing.T) (dir string, segs []string, bs []Batch) {
	t.Helper()
	dir, _ = writeBatches(t, Options{SegmentSize: 700}, 3, 3, 3, 3, 3, 3)
	segs = segmentPaths(t, dir, "global")
	require.GreaterOrEqual(t, len(segs), 2)
	bs = readBatches(t, segs[0])
	b, _ := os.ReadFile(segs[0])
	b[bs[1].Offset+recordFrameSize+int64(bs[1].Header.Length)/2] ^= 1
	require.NoError(t, os.WriteFile(segs[0], b, 0o644))
	return dir, segs, bs
}

func TestQuarantineMarker(t *testing.T) {
	dir, segs, bs := damagedSealed(t)

	l := openLog(t, dir, Options{})
	_, ok := l.QuarantinedStream("global")
	require.False(t, ok, "open read the frame of a sealed segment")
	_, _, err := l.Verify(context.Background())
	require.NoError(t, err)
	d, ok := l.QuarantinedStream("global")
	require.True(t, ok, "Verify found the damage but did not quarantine")
	require.Equal(t, segs[0], d.Segment)
	require.Equal(t, bs[1].Offset, d.Offset)
	require.NoError(t, l.Close())

	l = openLog(t, dir, Options{})
	d2, ok := l.QuarantinedStream("global")
	require.True(t, ok, "the next open forgot the quarantine")
	require.Equal(t, d, d2)
	_, err = l.Append(context.Background(), "global", testEvents(900, 1))
	require.ErrorIs(t, err, ErrQuarantined)
	require.NoError(t, l.Close())
	r, err := OpenLogReadOnly(dir, Options{})
	require.NoError(t, err)
	_, ok = r.QuarantinedStream("global")
	require.True(t, ok, "a read-only open does not see the marker")
	r.Close()
}

// TestRecordQuarantine: the package Verify's damage, recorded with
// RecordQuarantine and no Log open, quarantines the stream at the next
// open as Log.Verify's does; the first damage recorded stays, and a
// torn tail is not damage.
func TestRecordQuarantine(t *testing.T) {
	dir, segs, bs := damagedSealed(t)

	problems, err := Verify(dir)
	require.NoError(t, err)
	require.NotEmpty(t, problems)
	p := problems[0]
	require.False(t, p.Repairable)
	// Mended before the record (a writer replaced the segment): not
	// met again, not recorded.
	flip := func() {
		b, _ := os.ReadFile(segs[0])
		b[bs[1].Offset+recordFrameSize+int64(bs[1].Header.Length)/2] ^= 1
		require.NoError(t, os.WriteFile(segs[0], b, 0o644))
	}
	flip()
	_, err = RecordQuarantine(dir, p)
	require.ErrorIs(t, err, ErrDamageNotConfirmed)
	require.NoFileExists(t, filepath.Join(dir, "global", quarantineFile))
	flip()
	rec, err := RecordQuarantine(dir, p)
	require.NoError(t, err)
	require.True(t, rec)
	other := p
	other.Offset, other.Msg = 1, "another damage"
	rec, err = RecordQuarantine(dir, other)
	require.NoError(t, err)
	require.False(t, rec, "a second damage replaced the first")
	torn := p
	torn.Repairable = true
	_, err = RecordQuarantine(dir, torn)
	require.Error(t, err)

	l := openLog(t, dir, Options{})
	d, ok := l.QuarantinedStream("global")
	require.True(t, ok, "the open after RecordQuarantine did not quarantine")
	require.Equal(t, segs[0], d.Segment)
	require.Equal(t, bs[1].Offset, d.Offset)
	_, err = l.Append(context.Background(), "global", testEvents(900, 1))
	require.ErrorIs(t, err, ErrQuarantined)
	require.NoError(t, l.Close())
}
