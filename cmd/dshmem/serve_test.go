package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"dshmem/observer"
	"dshmem/observer/httpapi"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startInProcess runs a server over root in this process and writes its
// serve.json, as `dshmem serve` does; with, when given, sets its engine
// up first.
func startInProcess(t *testing.T, root string, with ...func(*observer.Engine)) *httpapi.Server {
	t.Helper()
	eng, err := observer.Open(context.Background(), root, observer.Options{})
	require.NoError(t, err)
	for _, f := range with {
		f(eng)
	}
	srv, err := httpapi.NewServer(eng, httpapi.ServerOptions{AutoCheckpoint: -1})
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, httpapi.WriteServeFile(root, httpapi.ServeInfo{Addr: l.Addr().String(), PID: os.Getpid(), Token: srv.Token()}))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		srv.Shutdown(context.Background())
		<-done
		httpapi.RemoveServeFile(root, os.Getpid())
		eng.Close()
	})
	return srv
}

func TestWritesForwardedToServer(t *testing.T) {
	root := t.TempDir()
	startInProcess(t, root)
	t.Run("Ingest", func(t *testing.T) {
		code, out, errs := cli(t, goodLines+"{\"id\":\"bad\"}\n", "--root", root, "ingest")
		require.EqualValues(t, 1, code, "exit %d, out %s, stderr %s", code, out, errs)
		require.EqualValues(t, `{"appended":3,"duplicates":0,"rejected":1}`, strings.TrimSpace(out), "exit %d, out %s, stderr %s", code, out, errs)
		require.Contains(t, errs, "line 4", "exit %d, out %s, stderr %s", code, out, errs)
	})
	var id string
	t.Run("Remember", func(t *testing.T) {
		code, out, errs := cli(t, "", "--root", root, "remember", "--cwd", "/home/u/proj", "--type", "decision", "we deploy with blue green")
		id = strings.TrimSpace(out)
		require.EqualValues(t, 0, code, "exit %d, out %s, stderr %s", code, out, errs)
		require.True(t, strings.HasPrefix(id, "m-"), "exit %d, out %s, stderr %s", code, out, errs)
		assert.Contains(t, errs, "sent to the server holding the root", "stderr %q: want a note that the server made the change", errs)
	})
	t.Run("Forget", func(t *testing.T) {
		code, out, errs := cli(t, "", "--root", root, "forget", id)
		require.EqualValues(t, 0, code, "exit %d, out %s, stderr %s", code, out, errs)
		require.Contains(t, out, "forgot", "exit %d, out %s, stderr %s", code, out, errs)
		code, _, errs = cli(t, "", "--root", root, "forget", id)
		require.EqualValues(t, 1, code, "forget twice: exit %d, stderr %s; want the same message as without a server", code, errs)
		require.Contains(t, errs, "entry "+id+" is already forgotten (see 'dshmem history", "forget twice: exit %d, stderr %s; want the same message as without a server", code, errs)
		code, _, errs = cli(t, "", "--root", root, "forget", "m-0000000000000000")
		require.EqualValues(t, 1, code, "unknown id: exit %d, stderr %s", code, errs)
		require.Contains(t, errs, "no entry", "unknown id: exit %d, stderr %s", code, errs)
	})
	t.Run("Checkpoint", func(t *testing.T) {
		code, out, errs := cli(t, "", "--root", root, "checkpoint", "--force", "--json")
		require.EqualValues(t, 0, code, "exit %d, out %s, stderr %s", code, out, errs)
		require.Contains(t, out, `"session": "s1"`, "exit %d, out %s, stderr %s", code, out, errs)
	})
}

func TestWriteWithoutServerFailsClearly(t *testing.T) {
	root := t.TempDir()
	release, err := observer.LockRoot(root) // a writer that is no server
	require.NoError(t, err)
	defer release()
	code, _, errs := cli(t, goodLines, "--root", root, "ingest")
	require.EqualValues(t, 1, code, "exit %d, stderr %s", code, errs)
	require.Contains(t, errs, "no running 'dshmem serve'", "exit %d, stderr %s", code, errs)
	require.Contains(t, errs, "one writer per root", "exit %d, stderr %s", code, errs)
}

func TestServeRefusesRemoteAddr(t *testing.T) {
	// Were the refusal broken, serve would run: the deadline stops it, so
	// the test fails at once instead of hanging.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"--root", t.TempDir(), "serve", "--addr", "0.0.0.0:0", "--no-watch"}, strings.NewReader(""), &out, &errb)
	errs := errb.String()
	require.NoError(t, ctx.Err(), "serve did not refuse the address: it ran until the deadline (stderr %s)", errs)
	require.EqualValues(t, 2, code, "exit %d, stderr %s", code, errs)
	require.Contains(t, errs, "not loopback", "exit %d, stderr %s", code, errs)
	require.Contains(t, errs, "--allow-remote", "exit %d, stderr %s", code, errs)
}

// TestServeProcessSIGTERM runs `dshmem serve` as a real process, talks
// to it, sends SIGTERM and checks exit 0 and serve.json removed.
func TestServeProcessSIGTERM(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatal("the go tool is needed to build the binary")
	}
	bin := buildDshmem(t)
	root := t.TempDir()
	cmd := exec.Command(bin, "--root", root, "serve", "--no-watch")
	stderr, _ := cmd.StderrPipe()
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stderr)
	if !sc.Scan() || !strings.Contains(sc.Text(), "listening on") {
		cmd.Process.Kill()
		t.Fatalf("got %q, want the listening line", sc.Text())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	info, err := httpapi.ReadServeFile(root)
	if err != nil || info.PID != cmd.Process.Pid {
		cmd.Process.Kill()
		t.Fatalf("serve.json: %+v %v", info, err)
	}
	fi, _ := os.Stat(filepath.Join(root, httpapi.ServeFile))
	assert.EqualValues(t, 0o600, fi.Mode().Perm(), "serve.json mode %v, want 0600", fi.Mode().Perm())
	req, _ := http.NewRequest("POST", "http://"+info.Addr+"/v1/events", strings.NewReader(goodLines))
	req.Header.Set("Authorization", "Bearer "+info.Token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var r httpapi.EventsResponse
	json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	require.EqualValues(t, 3, r.Appended, "got %+v", r)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		require.NoError(t, err, "exit: %v, want 0", err)
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("serve did not stop within 30s of SIGTERM")
	}
	if _, err := os.Stat(filepath.Join(root, httpapi.ServeFile)); !os.IsNotExist(err) {
		t.Fatalf("serve.json left behind: %v", err)
	}
	// Everything acknowledged is in the log: a fresh open sees it.
	code, out, errs := cli(t, goodLines, "--root", root, "ingest")
	require.EqualValues(t, 0, code, "exit %d, out %s, stderr %s", code, out, errs)
	require.EqualValues(t, `{"appended":0,"duplicates":3,"rejected":0}`, strings.TrimSpace(out), "exit %d, out %s, stderr %s", code, out, errs)
}

// TestServeIdleExit runs `dshmem serve --idle-exit` as a real process:
// with no request and no session it stops by itself, exit 0, serve.json
// removed; a server started without the flag does not.
func TestServeIdleExit(t *testing.T) {
	bin := buildDshmem(t)
	root := t.TempDir()
	cmd := exec.Command(bin, "--root", root, "serve", "--no-watch", "--idle-exit", "300ms")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		require.NoError(t, err, "exit: %v, want 0\n%s", err, stderr.String())
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("serve --idle-exit 300ms still runs after 30 s")
	}
	assert.False(t, !strings.Contains(stderr.String(), "idle for 300ms") || !strings.Contains(stderr.String(), "stopped"), "stderr does not say why it stopped:\n%s", stderr.String())
	_, err := os.Stat(filepath.Join(root, httpapi.ServeFile))
	require.True(t, os.IsNotExist(err), "serve.json left behind: %v", err)
	code, _, errs := cli(t, "", "--root", root, "serve", "--no-watch", "--idle-exit", "-1s")
	assert.False(t, code != 2 || !strings.Contains(errs, "negative"), "--idle-exit -1s: exit %d, stderr %s", code, errs)
}

// TestServeTwoAtOnce starts two servers on one root at the same moment,
// as two hosts' plugins may: the writer lock lets one serve; the other
// exits 1 naming the holder.
func TestServeTwoAtOnce(t *testing.T) {
	bin := buildDshmem(t)
	root := t.TempDir()
	type result struct {
		err    error
		stderr string
	}
	var cmds [2]*exec.Cmd
	var outs [2]*strings.Builder
	for i := range cmds {
		cmds[i] = exec.Command(bin, "--root", root, "serve", "--no-watch", "--idle-exit", "2s")
		outs[i] = &strings.Builder{}
		cmds[i].Stderr = outs[i]
	}
	for _, c := range cmds {
		require.NoError(t, c.Start())
	}
	res := make(chan result, 2)
	for i, c := range cmds {
		go func() { err := c.Wait(); res <- result{err, outs[i].String()} }()
	}
	var served, refused int
	for range 2 {
		select {
		case r := <-res:
			switch {
			case r.err == nil && strings.Contains(r.stderr, "listening on"):
				served++
			case r.err != nil && (strings.Contains(r.stderr, "already runs") || strings.Contains(r.stderr, "held by")):
				refused++
			default:
				t.Errorf("unexpected end: %v\n%s", r.err, r.stderr)
			}
		case <-time.After(30 * time.Second):
			cmds[0].Process.Kill()
			cmds[1].Process.Kill()
			t.Fatal("the servers did not end")
		}
	}
	require.EqualValues(t, 1, served, "%d served and %d refused, want one each", served, refused)
	require.EqualValues(t, 1, refused, "%d served and %d refused, want one each", served, refused)
}
