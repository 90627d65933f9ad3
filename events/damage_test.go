package events

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeBatches writes one Append (one batch) per group to a fresh log and
// returns the log directory and all events.
func writeBatches(t *testing.T, opts Options, groups ...int) (string, []Envelope) {
	t.Helper()
	dir := t.TempDir()
	l := openLog(t, dir, opts)
	var all []Envelope
	for _, n := range groups {
		all = append(all, mustAppend(t, l, "global", testEvents(len(all), n))...)
	}
	require.NoError(t, l.Close())
	return dir, all
}

func brokenFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "global", "*"+brokenSuffix+"*"))
	require.NoError(t, err)
	return m
}

// noSyncFS skips fsync, to keep tests that reopen a log hundreds of times
// fast. Durability is not what they check.
type noSyncFS struct{ OSFS }

func (noSyncFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return noSyncFile{f}, nil
}

type noSyncFile struct{ *os.File }

func (noSyncFile) Sync() error { return nil }

func TestTornTail(t *testing.T) {
	t.Run("EveryOffsetOfLastBatch", func(t *testing.T) {
		dir, all := writeBatches(t, Options{}, 3, 2, 4)
		seg := segmentPaths(t, dir, "global")[0]
		orig, _ := os.ReadFile(seg)
		bs := readBatches(t, seg)
		last := bs[len(bs)-1]
		kept := all[:len(all)-int(last.Header.Count)]
		for cut := last.Offset; cut < last.End; cut++ {
			for _, b := range brokenFiles(t, dir) {
				os.Remove(b)
			}
			torn := orig[:cut]
			require.NoError(t, os.WriteFile(seg, torn, 0o644))
			l, err := OpenLog(dir, Options{FS: noSyncFS{}})
			require.NoError(t, err, "cut at %d: OpenLog", cut)
			reps := l.Repairs()
			if cut == last.Offset {
				require.Len(t, reps, 0, "cut at a batch boundary: got repairs %v, want none", reps)
			} else {
				require.Len(t, reps, 1, "cut at %d: got repairs %+v, want one at offset %d dropping %d", cut, reps, last.Offset, cut-last.Offset)
				require.Equal(t, last.Offset, reps[0].Offset, "cut at %d: got repairs %+v, want one at offset %d dropping %d", cut, reps, last.Offset, cut-last.Offset)
				require.Equal(t, cut-last.Offset, reps[0].Dropped, "cut at %d: got repairs %+v, want one at offset %d dropping %d", cut, reps, last.Offset, cut-last.Offset)
				require.Equal(t, seg, reps[0].Segment, "cut at %d: got repairs %+v, want one at offset %d dropping %d", cut, reps, last.Offset, cut-last.Offset)
				b, err := os.ReadFile(reps[0].Broken)
				require.NoError(t, err, "cut at %d: .broken copy does not hold the original bytes (err %v)", cut, err)
				require.Equal(t, torn, b, "cut at %d: .broken copy does not hold the original bytes (err %v)", cut, err)
			}
			checkEvents(t, scanAll(t, l, "global", 1), kept)
			got := mustAppend(t, l, "global", testEvents(900, 1))
			require.Equal(t, uint64(len(kept)+1), got[0].Seq, "cut at %d: seq after repair: got %d, want %d", cut, got[0].Seq, len(kept)+1)
			l.Close()
			if p, err := Verify(dir); err != nil || len(p) != 0 {
				t.Fatalf("cut at %d: Verify after repair and append: %v, %v", cut, p, err)
			}
		}
	})

	t.Run("EveryOffsetOfNewSegment", func(t *testing.T) {
		// The last segment holds only its header and one batch, written
		// together: a crash can leave any prefix of it.
		dir, all := writeBatches(t, Options{SegmentSize: 1}, 3, 2)
		segs := segmentPaths(t, dir, "global")
		require.Len(t, segs, 2, "got %d segments, want 2", len(segs))
		seg := segs[1]
		orig, _ := os.ReadFile(seg)
		// Drop the seal of the new segment (SegmentSize 1 seals every segment).
		orig = orig[:len(orig)-recordFrameSize]
		bs := readBatches(t, seg)
		kept := all[:3]
		for cut := 0; cut < len(orig); cut++ {
			for _, b := range brokenFiles(t, dir) {
				os.Remove(b)
			}
			require.NoError(t, os.WriteFile(seg, orig[:cut], 0o644))
			l, err := OpenLog(dir, Options{SegmentSize: 1, FS: noSyncFS{}})
			require.NoError(t, err, "cut at %d: OpenLog", cut)
			reps := l.Repairs()
			if cut == int(bs[0].Offset) {
				// The stream header alone is a whole, empty segment.
				require.Len(t, reps, 0, "cut after the stream header: got repairs %+v, want none", reps)
			} else if len(reps) != 1 {
				t.Fatalf("cut at %d: got repairs %+v, want one", cut, reps)
			}
			if cut > 0 && len(reps) > 0 {
				b, err := os.ReadFile(reps[0].Broken)
				require.NoError(t, err, "cut at %d: .broken copy does not hold the original bytes (err %v)", cut, err)
				require.Equal(t, orig[:cut], b, "cut at %d: .broken copy does not hold the original bytes (err %v)", cut, err)
			}
			checkEvents(t, scanAll(t, l, "global", 1), kept)
			got := mustAppend(t, l, "global", testEvents(900, 1))
			require.EqualValues(t, 4, got[0].Seq, "cut at %d: seq after repair: got %d, want 4", cut, got[0].Seq)
			l.Close()
			if p, err := Verify(dir); err != nil || len(p) != 0 {
				t.Fatalf("cut at %d: Verify after repair and append: %v, %v", cut, p, err)
			}
			os.Remove(seg) // the append above recreated it
		}
	})

	t.Run("VerifyReportsRepairable", func(t *testing.T) {
		dir, _ := writeBatches(t, Options{}, 3, 2)
		seg := segmentPaths(t, dir, "global")[0]
		b, _ := os.ReadFile(seg)
		os.WriteFile(seg, b[:len(b)-5], 0o644)
		p, err := Verify(dir)
		require.NoError(t, err, "Verify: got %v, %v; want one repairable problem in %s", p, err, seg)
		require.Len(t, p, 1, "Verify: got %v, %v; want one repairable problem in %s", p, err, seg)
		require.True(t, p[0].Repairable, "Verify: got %v, %v; want one repairable problem in %s", p, err, seg)
		require.Equal(t, seg, p[0].Segment, "Verify: got %v, %v; want one repairable problem in %s", p, err, seg)
		reps, err := Repair(dir)
		require.NoError(t, err, "Repair: got %+v, %v", reps, err)
		require.Len(t, reps, 1, "Repair: got %+v, %v", reps, err)
		require.Equal(t, p[0].Offset, reps[0].Offset, "Repair: got %+v, %v", reps, err)
		if p, err := Verify(dir); err != nil || len(p) != 0 {
			t.Fatalf("Verify after Repair: got %v, %v", p, err)
		}
	})
}

func TestCorruption(t *testing.T) {
	type flip struct {
		name    string
		opts    Options
		seg     int  // index of the segment to damage
		batch   int  // index of the batch in it; -1 for the stream header
		inFrame bool // flip inside the data frame rather than the batch header
	}
	sealed := Options{SegmentSize: 1500}
	for _, c := range []flip{
		{"ActiveMiddleBatchFrame", Options{}, 0, 1, true},
		{"ActiveMiddleBatchHeader", Options{}, 0, 1, false},
		{"ActiveStreamHeader", Options{}, 0, -1, true},
		// A whole last batch that does not check is damage, not a torn
		// tail: a crash leaves a batch cut short, never a whole one.
		{"ActiveLastBatchFrame", Options{}, 0, 7, true},
		{"ActiveLastBatchHeader", Options{}, 0, 7, false},
		{"SealedMiddleBatchFrame", sealed, 0, 1, true},
		{"SealedLastBatchFrame", sealed, 0, 2, true},
		{"SealedStreamHeader", sealed, 0, -1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := writeBatches(t, c.opts, 3, 3, 3, 3, 3, 3, 3, 3)
			segs := segmentPaths(t, dir, "global")
			if c.opts.SegmentSize > 0 && len(segs) < 2 {
				t.Fatalf("got %d segments, want ≥ 2", len(segs))
			}
			seg := segs[c.seg]
			bs := readBatches(t, seg)
			require.False(t, len(bs) < 3, "segment has %d batches, want ≥ 3", len(bs))
			var off, at int64
			if c.batch < 0 {
				off, at = 0, bs[0].Offset/2
			} else {
				b := bs[c.batch]
				off, at = b.Offset, b.Offset+20
				if c.inFrame {
					at = b.Offset + recordFrameSize + int64(b.Header.Length)/2
				}
			}
			orig, _ := os.ReadFile(seg)
			damaged := bytes.Clone(orig)
			damaged[at] ^= 0x40
			os.WriteFile(seg, damaged, 0o644)

			problems, err := Verify(dir)
			require.NoError(t, err)
			found := false
			for _, p := range problems {
				if p.Segment == seg && p.Offset == off && !p.Repairable {
					found = true
				}
			}
			require.True(t, found, "Verify: got %v, want a problem in %s at offset %d", problems, seg, off)

			if c.opts.SegmentSize > 0 && c.batch >= 0 {
				// A sealed segment is trusted by its seal at open; the
				// damage is still found by Verify (above) and by every
				// read of the batch.
				trustedButNeverServed(t, dir, seg, off, bs[c.batch].Header.FirstSeq, Options{}, damaged)
				return
			}
			quarantinedUntouched(t, dir, seg, off, damaged)
		})
	}
}

// TestTrustedTail: batches of the active segment at or below
// Options.Trusted are checked by their headers at open, not read; damage
// in their data frames is found by Verify and by any read, never served.
// Damage past Trusted is refused at open as before.
func TestTrustedTail(t *testing.T) {
	dir, _ := writeBatches(t, Options{}, 3, 3, 3, 3, 3)
	seg := segmentPaths(t, dir, "global")[0]
	bs := readBatches(t, seg)
	orig, _ := os.ReadFile(seg)
	damage := func(t *testing.T, b Batch) (string, []byte) {
		d := t.TempDir()
		copyDir(t, dir, d)
		damaged := bytes.Clone(orig)
		damaged[b.Offset+recordFrameSize+int64(b.Header.Length)/2] ^= 0x40
		p := filepath.Join(d, "global", filepath.Base(seg))
		os.WriteFile(p, damaged, 0o644)
		return d, damaged
	}
	t.Run("Trusted", func(t *testing.T) {
		d, damaged := damage(t, bs[1])
		p := filepath.Join(d, "global", filepath.Base(seg))
		problems, err := Verify(d)
		require.NoError(t, err, "Verify: got %v, %v; want corruption first at offset %d", problems, err, bs[1].Offset)
		require.NotEqualValues(t, 0, len(problems), "Verify: got %v, %v; want corruption first at offset %d", problems, err, bs[1].Offset)
		require.Equal(t, bs[1].Offset, problems[0].Offset, "Verify: got %v, %v; want corruption first at offset %d", problems, err, bs[1].Offset)
		require.False(t, problems[0].Repairable, "Verify: got %v, %v; want corruption first at offset %d", problems, err, bs[1].Offset)
		trustedButNeverServed(t, d, p, bs[1].Offset, bs[1].Header.FirstSeq, Options{Trusted: map[string]uint64{"global": 15}}, damaged)
	})
	t.Run("PastTrusted", func(t *testing.T) {
		d, damaged := damage(t, bs[3])
		p := filepath.Join(d, "global", filepath.Base(seg))
		l, err := OpenLog(d, Options{Trusted: map[string]uint64{"global": 6}})
		require.NoError(t, err)
		q, ok := l.QuarantinedStream("global")
		l.Close()
		require.True(t, ok, "damage past Trusted: the stream is not quarantined")
		require.Equal(t, p, q.Segment, "got %+v, want damage at %s:%d", q, p, bs[3].Offset)
		require.Equal(t, bs[3].Offset, q.Offset, "got %+v, want damage at %s:%d", q, p, bs[3].Offset)
		got, _ := os.ReadFile(p)
		require.Equal(t, damaged, got, "the damaged segment was changed")
	})
}

// trustedButNeverServed checks a log whose damage at seg:off (in the
// batch starting at seq bad) open does not read: OpenLog succeeds, a
// scan of the stream yields only the events before the bad batch and
// then a *CorruptError at seg:off, Repair refuses, and nothing changed
// on disk.
func trustedButNeverServed(t *testing.T, dir, seg string, off int64, bad uint64, opts Options, damaged []byte) {
	t.Helper()
	l, err := OpenLog(dir, opts)
	require.NoError(t, err, "OpenLog: %v (a trusted batch is checked by its header only)", err)
	var last uint64
	err = l.Scan("global", 1, func(e Envelope) error {
		assert.False(t, e.Seq >= bad, "scan served seq %d of the damaged batch (starts at %d)", e.Seq, bad)
		last = e.Seq
		return nil
	})
	l.Close()
	var ce *CorruptError
	require.True(t, errors.As(err, &ce), "Scan: got %v after seq %d, want a *CorruptError at %s:%d", err, last, seg, off)
	require.Equal(t, seg, ce.Segment, "Scan: got %v after seq %d, want a *CorruptError at %s:%d", err, last, seg, off)
	require.Equal(t, off, ce.Offset, "Scan: got %v after seq %d, want a *CorruptError at %s:%d", err, last, seg, off)
	assert.Equal(t, bad-1, last, "scan stopped after seq %d, want %d (every event before the damage)", last, bad-1)
	if _, err := Repair(dir); !errors.As(err, &ce) {
		t.Fatalf("Repair: got %v, want a *CorruptError", err)
	}
	got, _ := os.ReadFile(seg)
	require.Equal(t, damaged, got, "the damaged segment was changed")
}

func TestSplicedBatches(t *testing.T) {
	dir, _ := writeBatches(t, Options{}, 2, 2, 2, 2, 2)
	seg := segmentPaths(t, dir, "global")[0]
	orig, _ := os.ReadFile(seg)
	bs := readBatches(t, seg)
	head := orig[:bs[0].Offset]
	for _, c := range []struct {
		name  string
		order []int
		want  []string // message fragment per problem, in order, at the offset of the batch
		at    []int    // position in order of the batch each problem is reported at
	}{
		{"Missing", []int{0, 1, 3, 4}, []string{"missing events: seqs 5..6"}, []int{2}},
		{"Duplicated", []int{0, 1, 2, 2, 3, 4}, []string{"duplicated or reordered"}, []int{3}},
		{"Reordered", []int{0, 1, 3, 2, 4}, []string{"missing events: seqs 5..6", "duplicated or reordered"}, []int{2, 3}},
		{"FirstMissing", []int{1, 2, 3, 4}, []string{"missing events: seqs 1..2"}, []int{0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			copyDir(t, dir, d)
			spliced := bytes.Clone(head)
			var offs []int64
			for _, i := range c.order {
				offs = append(offs, int64(len(spliced)))
				spliced = append(spliced, orig[bs[i].Offset:bs[i].End]...)
			}
			p := filepath.Join(d, "global", filepath.Base(seg))
			os.WriteFile(p, spliced, 0o644)
			problems, err := Verify(d)
			require.NoError(t, err)
			require.Len(t, problems, len(c.want), "Verify: got %v, want %d problems", problems, len(c.want))
			for i, pr := range problems {
				assert.False(t, pr.Segment != p || pr.Offset != offs[c.at[i]] || !strings.Contains(pr.Msg, c.want[i]), "problem %d: got %v, want %q at offset %d", i, pr, c.want[i], offs[c.at[i]])
			}
			checkQuarantined(t, d, "global", p, offs[c.at[0]])
		})
	}

	t.Run("MissingSegment", func(t *testing.T) {
		d, _ := writeBatches(t, Options{SegmentSize: 1}, 2, 2, 2)
		segs := segmentPaths(t, d, "global")
		os.Remove(segs[1])
		problems, err := Verify(d)
		require.NoError(t, err, "Verify: got %v, %v; want missing seqs 3..4 at %s:0", problems, err, segs[2])
		require.Len(t, problems, 1, "Verify: got %v, %v; want missing seqs 3..4 at %s:0", problems, err, segs[2])
		require.Equal(t, segs[2], problems[0].Segment, "Verify: got %v, %v; want missing seqs 3..4 at %s:0", problems, err, segs[2])
		require.EqualValues(t, 0, problems[0].Offset, "Verify: got %v, %v; want missing seqs 3..4 at %s:0", problems, err, segs[2])
		require.Contains(t, problems[0].Msg, "missing events: seqs 3..4", "Verify: got %v, %v; want missing seqs 3..4 at %s:0", problems, err, segs[2])
	})

	t.Run("SwappedSegments", func(t *testing.T) {
		// Same seqs, other content: the chain across segments breaks.
		d1, _ := writeBatches(t, Options{SegmentSize: 1}, 2, 2, 2)
		d2 := t.TempDir()
		l := openLog(t, d2, Options{SegmentSize: 1})
		for i := 0; i < 3; i++ {
			mustAppend(t, l, "global", testEvents(500+i*2, 2))
		}
		l.Close()
		s1, s2 := segmentPaths(t, d1, "global"), segmentPaths(t, d2, "global")
		b, _ := os.ReadFile(s2[1])
		os.WriteFile(s1[1], b, 0o644)
		problems, err := Verify(d1)
		require.NoError(t, err, "Verify: got %v, %v; want chain breaks at %s and %s", problems, err, s1[1], s1[2])
		require.Len(t, problems, 2, "Verify: got %v, %v; want chain breaks at %s and %s", problems, err, s1[1], s1[2])
		require.Equal(t, s1[1], problems[0].Segment, "Verify: got %v, %v; want chain breaks at %s and %s", problems, err, s1[1], s1[2])
		require.Equal(t, s1[2], problems[1].Segment, "Verify: got %v, %v; want chain breaks at %s and %s", problems, err, s1[1], s1[2])
		for _, p := range problems {
			require.Contains(t, p.Msg, "prev hash", "got %v, want a prev hash mismatch", p)
		}
	})
}

func TestVerifyEnvelopes(t *testing.T) {
	// A frame that passes its checksum but holds a bad envelope can only
	// come from a buggy writer; Verify must still name it.
	dir := t.TempDir()
	l := openLog(t, dir, Options{})
	mustAppend(t, l, "global", testEvents(0, 2))
	l.Close()
	seg := segmentPaths(t, dir, "global")[0]
	bs := readBatches(t, seg)
	orig, _ := os.ReadFile(seg)
	for _, c := range []struct{ name, content, want string }{
		{"BadJSON", "{\"v\":1,\"stream\":\"global\",\"seq\":3,\"id\":\"x\"\n", "decode envelope"},
		{"WrongSeq", "{\"v\":1,\"stream\":\"global\",\"seq\":9,\"id\":\"x\",\"type\":\"t\",\"time\":\"t\"}\n", "has seq 9, want 3"},
		{"WrongStream", "{\"v\":1,\"stream\":\"other\",\"seq\":3,\"id\":\"x\",\"type\":\"t\",\"time\":\"t\"}\n", `names stream "other"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			frame := sharedEncoder().EncodeAll([]byte(c.content), nil)
			h := BatchHeader{FirstSeq: 3, Count: 1, Length: uint32(len(frame)), Prev: bs[0].Header.Hash()}
			h.Checksum = sha256.Sum256(frame)
			b := appendRecord(bytes.Clone(orig), h, kindBatch)
			b = append(b, frame...)
			os.WriteFile(seg, b, 0o644)
			problems, err := Verify(dir)
			require.NoError(t, err, "Verify: got %v, %v; want %q at offset %d", problems, err, c.want, len(orig))
			require.Len(t, problems, 1, "Verify: got %v, %v; want %q at offset %d", problems, err, c.want, len(orig))
			require.Equal(t, int64(len(orig)), problems[0].Offset, "Verify: got %v, %v; want %q at offset %d", problems, err, c.want, len(orig))
			require.Contains(t, problems[0].Msg, c.want, "Verify: got %v, %v; want %q at offset %d", problems, err, c.want, len(orig))
		})
	}
}

// Bytes after a seal cannot come from a crash (the seal is written with
// the last batch and the segment is never opened again): they are
// corruption, not a torn tail. Cutting them off as a torn tail left the
// segment unsealed in memory, so the next batch was appended after the
// seal and cut off as a torn tail at the open after that, although it
// had been acknowledged.
func TestDataAfterSeal(t *testing.T) {
	for _, c := range []struct {
		name string
		junk []byte
	}{
		{"ShorterThanARecord", []byte("junkjunk")},
		{"LongerThanARecord", bytes.Repeat([]byte{0x5a}, 2*recordFrameSize)},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := writeBatches(t, Options{SegmentSize: 1}, 2, 2)
			segs := segmentPaths(t, dir, "global")
			seg := segs[len(segs)-1]
			orig, _ := os.ReadFile(seg)
			damaged := append(bytes.Clone(orig), c.junk...)
			os.WriteFile(seg, damaged, 0o644)
			off := int64(len(orig))

			problems, err := Verify(dir)
			require.NoError(t, err, "Verify: got %v, %v; want one unrepairable problem \"after the seal\" at %s:%d", problems, err, seg, off)
			require.Len(t, problems, 1, "Verify: got %v, %v; want one unrepairable problem \"after the seal\" at %s:%d", problems, err, seg, off)
			require.Equal(t, seg, problems[0].Segment, "Verify: got %v, %v; want one unrepairable problem \"after the seal\" at %s:%d", problems, err, seg, off)
			require.Equal(t, off, problems[0].Offset, "Verify: got %v, %v; want one unrepairable problem \"after the seal\" at %s:%d", problems, err, seg, off)
			require.False(t, problems[0].Repairable, "Verify: got %v, %v; want one unrepairable problem \"after the seal\" at %s:%d", problems, err, seg, off)
			require.Contains(t, problems[0].Msg, "after the seal", "Verify: got %v, %v; want one unrepairable problem \"after the seal\" at %s:%d", problems, err, seg, off)
			quarantinedUntouched(t, dir, seg, off, damaged)
		})
	}
}

// quarantinedUntouched checks that corruption at seg:off quarantines
// the stream, not the log: OpenLog opens, the stream reads every event
// before the damage and refuses appends with an error naming the
// segment, the offset and `dshmem salvage`, another stream takes
// appends, and the next open still knows (the marker). Neither OpenLog
// nor Repair changed the damaged segment or left a .broken copy.
func quarantinedUntouched(t *testing.T, dir, seg string, off int64, damaged []byte) {
	t.Helper()
	checkQuarantined(t, dir, "global", seg, off)
	var ce *CorruptError
	if _, err := Repair(dir); !errors.As(err, &ce) {
		t.Fatalf("Repair: got %v, want a *CorruptError", err)
	}
	got, _ := os.ReadFile(seg)
	require.Equal(t, damaged, got, "the damaged segment was changed")
	b := brokenFiles(t, dir)
	require.Len(t, b, 0, "got .broken files %v for corruption", b)
}

// TestSplicedBatchIsCaught: a batch taken from another log of the same
// stream, with the right seqs and count, put in place of the original —
// every frame checksum and every seq still fits — is caught by the hash
// chain alone, with the segment and the batch's offset.
func TestSplicedBatchIsCaught(t *testing.T) {
	dirA, _ := writeBatches(t, Options{}, 3, 3, 3, 3)
	// Log B: the same stream, the same batch sizes, other events.
	dirB := t.TempDir()
	lb := openLog(t, dirB, Options{})
	for i := range 4 {
		evs := testEvents(1000+i*3, 3)
		for k := range evs {
			evs[k].Data = []byte(`{"text":"from another log"}`)
		}
		mustAppend(t, lb, "global", evs)
	}
	require.NoError(t, lb.Close())
	segA := segmentPaths(t, dirA, "global")[0]
	segB := segmentPaths(t, dirB, "global")[0]
	ba, bb := readBatches(t, segA), readBatches(t, segB)
	require.Len(t, ba, 4)
	require.Len(t, bb, 4)
	a, err := os.ReadFile(segA)
	require.NoError(t, err)
	b, err := os.ReadFile(segB)
	require.NoError(t, err)
	// Batch 2 (seqs 4..6) of B replaces batch 2 of A.
	require.Equal(t, ba[1].Header.FirstSeq, bb[1].Header.FirstSeq)
	require.Equal(t, ba[1].Header.Count, bb[1].Header.Count)
	spliced := append(append(append([]byte(nil), a[:ba[1].Offset]...), b[bb[1].Offset:bb[1].End]...), a[ba[1].End:]...)
	require.NoError(t, os.WriteFile(segA, spliced, 0o644))

	problems, err := Verify(dirA)
	require.NoError(t, err)
	require.NotEmpty(t, problems, "a spliced batch passed Verify")
	p := problems[0]
	assert.Equal(t, segA, p.Segment)
	assert.Contains(t, p.Msg, "prev hash", "the problem is the hash chain, not a seq: %v", p)
	assert.False(t, p.Repairable, "a spliced batch is corruption, not a torn tail: %v", p)
	// And the writer quarantines the stream.
	checkQuarantined(t, dirA, "global", segA, p.Offset)
}

// checkQuarantined opens the log in dir and checks that stream is
// quarantined for damage at seg:off: it serves the seqs before the
// damage without an error, refuses appends (ErrQuarantined, the message
// naming the segment, the offset and the salvage command), another
// stream takes appends, and a second open quarantines it again.
func checkQuarantined(t *testing.T, dir, stream, seg string, off int64) {
	t.Helper()
	l, err := OpenLog(dir, Options{})
	require.NoError(t, err, "OpenLog with a damaged stream")
	d, ok := l.QuarantinedStream(stream)
	require.True(t, ok, "stream %s is not quarantined (damage at %s:%d)", stream, seg, off)
	require.Equal(t, seg, d.Segment, "got %+v, want damage at %s:%d", d, seg, off)
	require.Equal(t, off, d.Offset, "got %+v, want damage at %s:%d", d, seg, off)
	evs := scanAll(t, l, stream, 1)
	require.Len(t, evs, int(d.Serves), "a scan of the quarantined stream: got %d events, want the %d before the damage", len(evs), d.Serves)
	require.Equal(t, d.Serves, l.LastSeq(stream))
	_, err = l.Append(context.Background(), stream, testEvents(900, 1))
	require.ErrorIs(t, err, ErrQuarantined, "append to a quarantined stream")
	for _, want := range []string{filepath.Base(seg), fmt.Sprintf("offset %d", off), "dshmem salvage " + stream} {
		require.Contains(t, err.Error(), want)
	}
	mustAppend(t, l, "other", testEvents(950, 2))
	require.NoError(t, l.Close())
	l, err = OpenLog(dir, Options{})
	require.NoError(t, err)
	d2, ok := l.QuarantinedStream(stream)
	require.NoError(t, l.Close())
	require.True(t, ok, "the second open forgot the quarantine")
	require.Equal(t, d.Segment, d2.Segment)
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "other")))
}
