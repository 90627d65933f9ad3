package events

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Golden segments: a log written once by this version and committed.
// Every later version must read it exactly. Regenerate (only when the
// format changes on purpose) with:
//
//	go test ./events -run TestGolden -update
var update = flag.Bool("update", false, "rewrite testdata/segments from this version's writer")

const goldenDir = "../testdata/segments"

var goldenStreams = []string{"global", "ws-3f1a2b3c4d5e6f708192"}

func writeGolden(t *testing.T) {
	t.Helper()
	logDir := filepath.Join(goldenDir, "log")
	require.NoError(t, os.RemoveAll(logDir))
	l, err := OpenLog(logDir, Options{SegmentSize: 2048, MaxBatch: 4})
	require.NoError(t, err)
	var expected bytes.Buffer
	for si, stream := range goldenStreams {
		for call := 0; call < 8; call++ {
			evs := testEvents(si*1000+call*3, 1+call%3)
			for _, e := range mustAppend(t, l, stream, evs) {
				expected.WriteString(marshalLine(t, e) + "\n")
			}
		}
	}
	require.NoError(t, l.Close())
	require.NoError(t, os.WriteFile(filepath.Join(goldenDir, "expected.jsonl"), expected.Bytes(), 0o644))

	// Regression files for the reader, cut from a three-batch segment.
	tmp := t.TempDir()
	l, err = OpenLog(tmp, Options{})
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		mustAppend(t, l, "global", testEvents(i*2, 2))
	}
	l.Close()
	seg := segmentPaths(t, tmp, "global")[0]
	b, _ := os.ReadFile(seg)
	bs := readBatches(t, seg)
	mid := bs[1]
	torn := b[:mid.Offset+recordFrameSize+int64(mid.Header.Length)/2]
	corrupt := bytes.Clone(b)
	corrupt[mid.Offset+recordFrameSize+int64(mid.Header.Length)/2] ^= 0x01
	for name, data := range map[string][]byte{
		"three-batches.jsonl.zst":     b,
		"torn-mid-batch.jsonl.zst":    torn,
		"flipped-mid-batch.jsonl.zst": corrupt,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(goldenDir, name), data, 0o644))
	}
}

func TestGolden(t *testing.T) {
	if *update {
		writeGolden(t)
	}
	want, err := os.ReadFile(filepath.Join(goldenDir, "expected.jsonl"))
	require.NoError(t, err, "read golden file (generate with -update)")
	dir := t.TempDir()
	copyDir(t, filepath.Join(goldenDir, "log"), dir)
	l := openLog(t, dir, Options{})
	if got := strings.Join(l.Streams(), ","); got != strings.Join(goldenStreams, ",") {
		t.Fatalf("Streams: got %s, want %v", got, goldenStreams)
	}
	var got bytes.Buffer
	for _, stream := range goldenStreams {
		n := len(segmentPaths(t, dir, stream))
		require.False(t, n < 2, "stream %s: %d segments, want several", stream, n)
		for _, e := range scanAll(t, l, stream, 1) {
			got.WriteString(marshalLine(t, e) + "\n")
		}
	}
	require.Equal(t, string(want), got.String(), "golden log: got\n%s\nwant\n%s", got.String(), want)
	require.Len(t, l.Repairs(), 0, "golden log needed repairs: %v", l.Repairs())
	if p, err := Verify(filepath.Join(goldenDir, "log")); err != nil || len(p) != 0 {
		t.Fatalf("Verify golden log: got %v, %v", p, err)
	}
	// The raw lines are byte for byte what the writer produced.
	var raw bytes.Buffer
	for _, stream := range goldenStreams {
		for _, p := range segmentPaths(t, dir, stream) {
			f, _ := os.Open(p)
			r := NewReader(bufio.NewReader(f))
			for {
				b, err := r.NextRaw()
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
				for _, line := range b.Lines {
					raw.Write(line)
					raw.WriteByte('\n')
				}
			}
			f.Close()
		}
	}
	require.Equal(t, string(want), raw.String(), "raw lines differ from expected.jsonl")
}

// TestReaderFiles reads the regression segments in testdata/segments.
func TestReaderFiles(t *testing.T) {
	for _, c := range []struct {
		file        string
		wantBatches int
		wantErr     string // "", "torn", "corrupt"
	}{
		{"three-batches.jsonl.zst", 3, ""},
		{"torn-mid-batch.jsonl.zst", 1, "torn"},
		{"flipped-mid-batch.jsonl.zst", 2, "corrupt"},
		{"scrubbed-batch.jsonl.zst", 3, ""},
		{"torn-scrubbed-record.jsonl.zst", 1, "torn"},
	} {
		t.Run(c.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join(goldenDir, c.file))
			require.NoError(t, err)
			defer f.Close()
			r := NewReader(f)
			var (
				batches  int
				lastEnd  int64
				gotErr   string
				errAtEnd int64 = -1
			)
			for {
				b, err := r.Next()
				if err == io.EOF {
					break
				}
				var ce *CorruptError
				if errors.Is(err, ErrTornTail) {
					gotErr, errAtEnd = "torn", r.Offset()
					break
				}
				if errors.As(err, &ce) {
					gotErr, errAtEnd = "corrupt", ce.Offset
					require.Equal(t, lastEnd, ce.Offset, "corruption at offset %d, want %d (end of the last good batch)", ce.Offset, lastEnd)
					continue
				}
				require.NoError(t, err)
				require.Len(t, b.Events, int(b.Header.Count), "batch at %d: got %d events, header says %d", b.Offset, len(b.Events), b.Header.Count)
				batches++
				lastEnd = b.End
			}
			if batches != c.wantBatches || gotErr != c.wantErr {
				t.Fatalf("got %d batches and error %q, want %d and %q", batches, gotErr, c.wantBatches, c.wantErr)
			}
			if gotErr == "torn" && errAtEnd != lastEnd {
				t.Fatalf("torn tail at %d, want %d", errAtEnd, lastEnd)
			}
		})
	}
}

// TestReaderScrubbed reads a sealed segment whose middle batch was
// scrubbed (Rewrite, a version 2 record): the chain runs through the
// scrubbed batch's original hash, and the seal names the last batch.
func TestReaderScrubbed(t *testing.T) {
	bs := readBatches(t, filepath.Join(goldenDir, "scrubbed-batch.jsonl.zst"))
	require.Len(t, bs, 3)
	require.False(t, bs[0].Header.Scrubbed)
	require.True(t, bs[1].Header.Scrubbed, "the middle batch is scrubbed")
	require.False(t, bs[2].Header.Scrubbed)
	require.Equal(t, bs[0].Header.Hash(), bs[1].Header.Prev)
	require.Equal(t, bs[1].Header.Hash(), bs[2].Header.Prev, "the batch after a scrubbed one names its original hash")
	require.Equal(t, bs[1].Header.Original().Hash(), bs[1].Header.Hash())
	require.NotEqual(t, bs[1].Header.Checksum, bs[1].Header.OrigChecksum)
	require.Contains(t, string(bs[1].Events[0].Data), "[scrubbed]")
	problems, checked, err := verify(OSFS{}, t.TempDir())
	require.NoError(t, err)
	require.Empty(t, problems)
	require.Empty(t, checked.Scrubbed)
}

// TestReaderHeader checks that Header gives the same answer on every
// call and that a damaged header does not hide the batches after it.
func TestReaderHeader(t *testing.T) {
	good, err := os.ReadFile(filepath.Join(goldenDir, "three-batches.jsonl.zst"))
	require.NoError(t, err)
	flipped := bytes.Clone(good)
	flipped[0] ^= 0x01
	for _, c := range []struct {
		name        string
		data        []byte
		wantErr     func(error) bool
		wantBatches int
	}{
		{"OK", good, func(err error) bool { return err == nil }, 3},
		{"ErrTornTail", good[:10], func(err error) bool { return errors.Is(err, ErrTornTail) }, 0},
		{"CorruptError", flipped, func(err error) bool { var ce *CorruptError; return errors.As(err, &ce) && ce.Offset == 0 }, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := NewReader(bytes.NewReader(c.data))
			h1, err1 := r.Header()
			h2, err2 := r.Header()
			if !c.wantErr(err1) || h1 != h2 || err1 != err2 {
				t.Fatalf("Header twice: got (%+v, %v) then (%+v, %v)", h1, err1, h2, err2)
			}
			if err1 == nil && (h1.Stream != "global" || h1.FirstSeq != 1) {
				t.Fatalf("Header: got %+v, want stream global from seq 1", h1)
			}
			batches := 0
			for {
				_, err := r.Next()
				if err == io.EOF || errors.Is(err, ErrTornTail) {
					break
				}
				require.NoError(t, err, "Next")
				batches++
			}
			require.Equal(t, c.wantBatches, batches, "got %d batches, want %d", batches, c.wantBatches)
		})
	}
}
