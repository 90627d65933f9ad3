package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"dshmem/observer/backup"
	"dshmem/observer/httpapi"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recallOut is `recall --json` of a query, as printed.
func recallOut(t *testing.T, root, q string) string {
	t.Helper()
	code, out, errs := cli(t, "", "--root", root, "recall", "--json", "--timeout", "1m", "--kind", "all", "--cwd", "/home/u/proj", q)
	require.Equal(t, 0, code, "recall: %s", errs)
	require.Contains(t, out, `"id"`, "recall %q found nothing: the test would prove nothing", q)
	return out
}

func TestBackupCommands(t *testing.T) {
	base := t.TempDir()
	root, dir := filepath.Join(base, "memory"), filepath.Join(base, "memory-backup")
	code, _, errs := cli(t, goodLines+memoryLines()+aDayOfMemory(), "--root", root, "ingest")
	require.Equal(t, 0, code, errs)
	before := recallOut(t, root, "release checklist rotation probe")

	code, out, errs := cli(t, "", "--root", root, "backup", "--json")
	require.Equal(t, 0, code, errs)
	var rep backup.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, dir, rep.To, "the default is memory-backup/ beside the root")
	assert.NotEmpty(t, rep.Copied)

	code, out, _ = cli(t, "", "--root", root, "backup")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "nothing changed since the last backup: nothing copied")

	code, out, errs = cli(t, "", "backup", "verify", dir)
	require.Equal(t, 0, code, "verify: %s %s", out, errs)
	assert.Contains(t, out, "ok: backup "+dir)

	// Backup → delete the root → restore-backup → replay --verify, recall as before.
	require.NoError(t, os.RemoveAll(root))
	code, out, errs = cli(t, "", "restore-backup", dir, "--root", root)
	require.Equal(t, 0, code, "restore: %s %s", out, errs)
	assert.Contains(t, out, "index: from the snapshot")
	code, out, errs = cli(t, "", "--root", root, "replay", "--verify")
	require.Equal(t, 0, code, "replay --verify after restore: %s %s", out, errs)
	assert.Equal(t, before, recallOut(t, root, "release checklist rotation probe"), "recall after restore: same ids, same order")

	t.Run("RestoreRefusesNonEmptyRoot", func(t *testing.T) {
		snap := rootFiles(t, root, false)
		code, _, errs := cli(t, "", "restore-backup", dir, "--root", root)
		require.Equal(t, 1, code)
		assert.Contains(t, errs, "is not empty")
		sameFiles(t, "a refused restore", rootFiles(t, root, false), snap)
	})
	t.Run("VerifyFindsFlippedByte", func(t *testing.T) {
		m, err := backup.ReadManifest(dir)
		require.NoError(t, err)
		p := filepath.Join(dir, filepath.FromSlash(m.Files[0].Path))
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		b[len(b)/3] ^= 0x10
		require.NoError(t, os.WriteFile(p, b, 0o644))
		code, out, _ := cli(t, "", "backup", "verify", dir)
		assert.Equal(t, 1, code)
		assert.Contains(t, out, "problem: "+m.Files[0].Path+" does not match the manifest")
		code, out, _ = cli(t, "", "backup", "verify", "--json", dir)
		assert.Equal(t, 1, code)
		var v backup.VerifyReport
		require.NoError(t, json.Unmarshal([]byte(out), &v))
		assert.NotEmpty(t, v.Problems)
		b[len(b)/3] ^= 0x10
		require.NoError(t, os.WriteFile(p, b, 0o644))
	})
	t.Run("VerifyFindsMissingFile", func(t *testing.T) {
		m, err := backup.ReadManifest(dir)
		require.NoError(t, err)
		p := filepath.Join(dir, m.Index.Path)
		require.NoError(t, os.Rename(p, p+".away"))
		code, out, _ := cli(t, "", "backup", "verify", dir)
		assert.Equal(t, 1, code)
		assert.Contains(t, out, "problem: "+m.Index.Path+" is missing")
		require.NoError(t, os.Rename(p+".away", p))
	})
	t.Run("Mistakes", func(t *testing.T) {
		code, _, errs := cli(t, "", "backup", "verify")
		assert.Equal(t, 2, code)
		assert.Contains(t, errs, "needs exactly one DIR")
		code, _, errs = cli(t, "", "backup", "verify", base)
		assert.Equal(t, 1, code)
		assert.Contains(t, errs, "holds no manifest.json")
		code, _, errs = cli(t, "", "--root", filepath.Join(base, "nope"), "backup")
		assert.Equal(t, 1, code)
		assert.Contains(t, errs, "no memory root at")
		code, _, errs = cli(t, "", "--root", root, "backup", "--to", filepath.Join(root, "x"))
		assert.Equal(t, 1, code)
		assert.Contains(t, errs, "overlap")
		for _, c := range []string{"backup", "restore-backup", "rotate"} {
			code, out, _ := cli(t, "", c, "--help")
			assert.Equal(t, 0, code)
			assert.Contains(t, out, "Examples:", "%s --help teaches with examples", c)
		}
	})
	t.Run("Rotate", func(t *testing.T) {
		// The events are of 2026-08-18: more than 30 days before today.
		day := filepath.Join(root, "sessions", "2026-08-18.md")
		old, err := os.ReadFile(day)
		require.NoError(t, err)
		code, out, errs := cli(t, "", "--root", root, "rotate")
		require.Equal(t, 0, code, errs)
		assert.Contains(t, out, "moved 1 session files")
		moved, err := os.ReadFile(filepath.Join(root, "sessions", "archive", "2026-08-18.md"))
		require.NoError(t, err)
		assert.Equal(t, string(old), string(moved))
		code, out, _ = cli(t, "", "--root", root, "rotate")
		require.Equal(t, 0, code)
		assert.Contains(t, out, "nothing to rotate")
		code, out, errs = cli(t, "", "--root", root, "replay", "--verify")
		require.Equal(t, 0, code, "replay --verify after rotate: %s %s", out, errs)
	})
}

// TestBackupBesideServeIngesting: a backup taken while a `dshmem serve`
// child process ingests is consistent: it verifies, restores, and the
// restored root passes replay --verify with every event the manifest
// names.
func TestBackupBesideServeIngesting(t *testing.T) {
	bin := buildDshmem(t)
	base := t.TempDir()
	root, dir := filepath.Join(base, "memory"), filepath.Join(base, "bk")
	code, _, errs := runBin(t, bin, "--root", root, "ingest", writeTemp(t, goodLines+memoryLines()))
	require.Equal(t, 0, code, errs)
	stop := startServe(t, bin, root)
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	info, err := httpapi.ReadServeFile(root)
	require.NoError(t, err)

	// Writers: four sessions posting batches until told to stop.
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := 0
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				var evs []map[string]any
				for k := 0; k < 20; k++ {
					evs = append(evs, map[string]any{"id": fmt.Sprintf("w%d:%d:%d", w, i, k), "type": "user/message",
						"time": "2026-11-20T10:00:00Z", "session": fmt.Sprintf("load%d", w), "cwd": fmt.Sprintf("/home/u/p%d", w%2),
						"data": map[string]any{"text": fmt.Sprintf("writer %d batch %d line %d: the migration of the orders table", w, i, k)}})
				}
				body, _ := json.Marshal(evs)
				req, _ := http.NewRequest("POST", "http://"+info.Addr+"/v1/events", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+info.Token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return
				}
				resp.Body.Close()
				if resp.StatusCode == 200 {
					mu.Lock()
					acked += len(evs)
					mu.Unlock()
				}
			}
		}(w)
	}
	var reps []backup.Report
	for i := 0; i < 3; i++ {
		code, out, errs := runBin(t, bin, "--root", root, "backup", "--to", dir, "--json")
		require.Equal(t, 0, code, "backup %d beside serve: %s", i, errs)
		assert.Contains(t, errs, "run by the server holding the root")
		var rep backup.Report
		require.NoError(t, json.Unmarshal([]byte(out), &rep))
		reps = append(reps, rep)
	}
	close(done)
	wg.Wait()
	stop()
	stop = nil
	mu.Lock()
	n := acked
	mu.Unlock()
	require.Greater(t, n, 0, "no event was ingested during the backups: the test would prove nothing")
	last := reps[len(reps)-1]
	assert.False(t, last.Unchanged, "the writers changed the root between backups")

	code, out, errs := runBin(t, bin, "backup", "verify", dir)
	require.Equal(t, 0, code, "verify of a backup taken beside serve: %s %s", out, errs)
	restored := filepath.Join(base, "restored")
	code, out, errs = runBin(t, bin, "restore-backup", dir, "--root", restored, "--json")
	require.Equal(t, 0, code, "restore: %s %s", out, errs)
	var rr backup.RestoreReport
	require.NoError(t, json.Unmarshal([]byte(out), &rr))
	assert.Equal(t, "snapshot", rr.Index, "got %+v", rr)
	assert.Equal(t, last.Streams, rr.Streams)
	t.Logf("%d events acknowledged during 3 backups; the last held %v, its snapshot %v; restore folded %d past it", n, last.Streams, last.Cursors, rr.CaughtUp)
	code, out, errs = runBin(t, bin, "--root", restored, "replay", "--verify")
	require.Equal(t, 0, code, "replay --verify of the restored root: %s %s", out, errs)
	// Every stream holds exactly what the manifest says, and the index
	// folded all of it.
	code, out, errs = runBin(t, bin, "--root", restored, "sql", "--json", "SELECT stream, seq FROM cursors ORDER BY stream")
	require.Equal(t, 0, code, errs)
	for s, seq := range last.Streams {
		assert.Contains(t, out, fmt.Sprintf("%q", s), "stream %s", s)
		assert.True(t, strings.Contains(out, fmt.Sprintf("%d", seq)), "stream %s up to seq %d: %s", s, seq, out)
	}
}

// writeTemp writes s to a file in a temp dir and returns its path.
func writeTemp(t *testing.T, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
	return p
}
