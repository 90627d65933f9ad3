package payload_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"dshmem/events"

	"github.com/stretchr/testify/require"
)

const testdata = "../../testdata"

// line is one intake line of a testdata file: the fields the tests need.
type line struct {
	ID   string          `json:"id"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// readLines reads a JSONL file of intake lines under testdata/.
func readLines(t testing.TB, rel string) []line {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdata, rel))
	require.NoError(t, err)
	var out []line
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var x line
		if err := json.Unmarshal(l, &x); err != nil {
			t.Fatalf("%s: %v: %s", rel, err, l)
		}
		out = append(out, x)
	}
	return out
}

// goldenEvents reads every event of the golden segments
// (testdata/segments/log) with the segment reader, read only.
func goldenEvents(t testing.TB) []events.Envelope {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(testdata, "segments", "log", "*", "*.jsonl.zst"))
	require.NoError(t, err, "golden segments: %v, %v", segs, err)
	require.NotEqualValues(t, 0, len(segs), "golden segments: %v, %v", segs, err)
	sort.Strings(segs)
	var out []events.Envelope
	for _, p := range segs {
		f, err := os.Open(p)
		require.NoError(t, err)
		r := events.NewReader(bufio.NewReader(f))
		for {
			b, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				f.Close()
				t.Fatalf("%s: %v", p, err)
			}
			for _, e := range b.Events {
				e.Data = bytes.Clone(e.Data)
				out = append(out, e)
			}
		}
		f.Close()
	}
	return out
}
