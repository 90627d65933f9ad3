package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"dshmem/observer/httpapi"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeEncoders runs `dshmem serve --encoders 2` as a real process
// with the sentence encoder installed: healthz reports the fill with two
// encoders, and every English message ingested gets a vector (a Chinese
// one none) while the server keeps answering. Out-of-range counts are
// refused with the range. Mutations caught: serve passing a fixed 1 to
// StartVectors (encoders 1, not 2); the fill's totals not accumulated
// (encoded stays 0); healthz leaving out "vectors".
func TestServeEncoders(t *testing.T) {
	for _, n := range []string{"0", "-1", "65", "x"} {
		code, _, errs := cli(t, "", "--root", t.TempDir(), "serve", "--no-watch", "--encoders", n)
		assert.False(t, code != 2 || !strings.Contains(errs, "--encoders"), "--encoders %s: exit %d, stderr %q; want 2 naming the flag", n, code, errs)
	}
	// Encoders without vectors is a contradiction, named before anything
	// starts (the root is not even created).
	none := filepath.Join(t.TempDir(), "root")
	code, _, errs := cli(t, "", "--root", none, "serve", "--no-watch", "--vectors=false", "--encoders", "2")
	assert.Equal(t, 2, code, "stderr %q", errs)
	assert.Contains(t, errs, "--vectors=false")
	assert.NoDirExists(t, none)
	_, src, _ := cli(t, "", "model", "status", "--json")
	if !strings.Contains(src, `"installed":true`) {
		require.NotEqualValues(t, "true", os.Getenv("CI"), "the model is needed in CI; status --json: %s", src)
		t.Skipf("model not installed (`dshmem model install`); status --json: %s", src)
	}
	bin := buildDshmem(t)
	root := t.TempDir()
	cmd := exec.Command(bin, "--root", root, "serve", "--no-watch", "--maintenance-every", "0", "--encoders", "2")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	sc := bufio.NewScanner(stderr)
	if !sc.Scan() || !strings.Contains(sc.Text(), "listening on") {
		t.Fatalf("serve: got %q, want the listening line", sc.Text())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	info, err := httpapi.ReadServeFile(root)
	require.NoError(t, err)
	health := func() httpapi.Health {
		req, _ := http.NewRequest("GET", "http://"+info.Addr+"/v1/healthz", nil)
		req.Header.Set("Authorization", "Bearer "+info.Token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var h httpapi.Health
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&h))
		return h
	}
	h := health()
	require.NotNil(t, h.Vectors, "healthz has no vectors with the model installed: %+v", h)
	assert.Equal(t, 2, h.Vectors.Encoders, "healthz vectors: %+v", *h.Vectors)

	const english = 40
	var lines []string
	for i := range english {
		lines = append(lines, fmt.Sprintf(`{"id":"m%d","session":"s1","type":"user/message","time":"2026-11-30T10:00:%02dZ","cwd":"/work/app","data":{"text":"The nightly build of service %d fails on the migration step with a timeout"}}`, i, i%60, i))
	}
	lines = append(lines, `{"id":"zh","session":"s1","type":"user/message","time":"2026-11-30T10:01:00Z","cwd":"/work/app","data":{"text":"数据库迁移在夜间构建时超时失败"}}`)
	code, out, errs := cli(t, strings.Join(lines, "\n")+"\n", "--root", root, "ingest", "-")
	require.EqualValues(t, 0, code, "ingest: %s %s", out, errs)

	deadline := time.Now().Add(time.Minute)
	for {
		h = health()
		require.NotNil(t, h.Vectors)
		require.Empty(t, h.Vectors.Error, "fill error")
		if !h.Vectors.Filling && h.Vectors.Encoded >= english {
			break
		}
		require.True(t, time.Now().Before(deadline), "after a minute the fill reports %+v, want %d encoded", *h.Vectors, english)
		time.Sleep(50 * time.Millisecond)
	}
	assert.Equal(t, english, h.Vectors.Encoded, "healthz vectors: %+v", *h.Vectors)
	assert.Equal(t, 1, h.Vectors.NotEnglish, "healthz vectors: %+v", *h.Vectors)
}
