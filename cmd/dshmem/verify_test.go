package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"dshmem/events"
	"dshmem/observer"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVerifyRecordsQuarantine: damage that open trusts (a byte flipped
// in a batch the index has folded, which open checks by its header
// only) is found by verify, which records the stream's quarantine: from
// then on every command refuses writes to the stream, without touching
// its segment, and stats shows it, until a salvage.
func TestVerifyRecordsQuarantine(t *testing.T) {
	root := t.TempDir()
	code, _, errs := cli(t, goodLines, "--root", root, "ingest")
	require.EqualValues(t, 0, code, "ingest: %s", errs)
	code, out, errs := cli(t, "", "--root", root, "verify", "--json")
	require.EqualValues(t, 0, code, "verify --json: %s", errs)
	var vr verifyReport
	require.NoError(t, json.Unmarshal([]byte(out), &vr), out)
	assert.Equal(t, verifyReport{OK: true, Streams: 1, Segments: 1, Events: 3, Problems: []events.Problem{}, Quarantined: []string{},
		Lost: []events.ScrubbedRange{}, Scrubbed: []events.ScrubbedRange{}, Notes: []string{}}, vr)
	segs, _ := filepath.Glob(filepath.Join(root, "log", "ws-*", "*.jsonl.zst"))
	require.Len(t, segs, 1)
	stream := filepath.Base(filepath.Dir(segs[0]))
	b, err := os.ReadFile(segs[0])
	require.NoError(t, err)
	b[len(b)-10] ^= 0xff
	require.NoError(t, os.WriteFile(segs[0], b, 0o600))

	// Before verify, open does not see it.
	code, _, errs = cli(t, "", "--root", root, "stats")
	require.EqualValues(t, 0, code, "stats: %s", errs)
	require.NoFileExists(t, filepath.Join(root, "log", stream, "quarantine.json"))

	code, _, errs = cli(t, "", "--root", root, "verify")
	require.EqualValues(t, 1, code, "verify: %s", errs)
	assert.Contains(t, errs, "stream "+stream+" is damaged: it is quarantined")
	require.FileExists(t, filepath.Join(root, "log", stream, "quarantine.json"))

	code, out, errs = cli(t, "", "--root", root, "stats", "--json")
	require.EqualValues(t, 0, code, "stats: %s", errs)
	var st rootStats
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.Len(t, st.Quarantined, 1, out)
	assert.Equal(t, stream, st.Quarantined[0].Stream)

	code, _, errs = cli(t, "", "--root", root, "remember", "--cwd", "/home/u/proj", "the config loader reads tabs")
	require.NotEqualValues(t, 0, code, "a remember into the damaged stream was taken")
	assert.Contains(t, errs, "dshmem salvage "+stream)
	after, err := os.ReadFile(segs[0])
	require.NoError(t, err)
	assert.Equal(t, b, after, "the refused write changed the damaged segment")

	// A second verify keeps the first damage recorded and says the same.
	code, out, errs = cli(t, "", "--root", root, "verify", "--json")
	require.EqualValues(t, 1, code, "verify --json: %s", errs)
	vr = verifyReport{}
	require.NoError(t, json.Unmarshal([]byte(out), &vr), out)
	assert.False(t, vr.OK)
	require.Len(t, vr.Problems, 1, out)
	assert.Equal(t, segs[0], vr.Problems[0].Segment)
	assert.False(t, vr.Problems[0].Repairable)
	assert.Equal(t, []string{stream}, vr.Quarantined)

	// A process holding the root is named: it writes on until it opens
	// the root again. (The marker is there already: verify says the
	// same, as its marker says.)
	release, err := observer.LockRoot(root)
	require.NoError(t, err)
	code, _, errs = cli(t, "", "--root", root, "verify")
	release()
	require.EqualValues(t, 1, code, "verify: %s", errs)
	assert.Contains(t, errs, fmt.Sprintf("process %d holds the root and writes to %s until it opens the root again", os.Getpid(), stream))

	code, _, errs = cli(t, "", "--root", root, "salvage", stream)
	require.EqualValues(t, 0, code, "salvage: %s", errs)
	code, _, errs = cli(t, "", "--root", root, "remember", "--cwd", "/home/u/proj", "the config loader reads tabs")
	require.EqualValues(t, 0, code, "remember after the salvage: %s", errs)
}
