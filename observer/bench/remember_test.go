package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"dshmem/observer"
	"dshmem/observer/httpapi"
)

// benchServerEnv makes the test binary the server BenchRemember starts:
// "serve" runs it as `dshmem --root R serve --no-watch` would, "fail"
// exits at once.
const benchServerEnv = "DSHMEM_BENCH_TEST_SERVER"

func TestMain(m *testing.M) {
	switch os.Getenv(benchServerEnv) {
	case "serve":
		if err := serveForTest(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "fail":
		fmt.Fprintln(os.Stderr, "refusing to serve")
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// serveForTest is the part of `dshmem serve` BenchRemember relies on:
// it listens, writes serve.json, serves until SIGTERM, then shuts down.
func serveForTest(args []string) error {
	if len(args) != 4 || args[0] != "--root" || args[2] != "serve" || args[3] != "--no-watch" {
		return fmt.Errorf("test server: got args %q, want --root R serve --no-watch", args)
	}
	root := args[1]
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer cancel()
	eng, err := observer.Open(ctx, root, observer.Options{})
	if err != nil {
		return err
	}
	defer eng.Close()
	srv, err := httpapi.NewServer(eng, httpapi.ServerOptions{AutoCheckpoint: -1})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	if err := httpapi.WriteServeFile(root, httpapi.ServeInfo{Addr: l.Addr().String(), PID: os.Getpid(), Token: srv.Token()}); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	<-ctx.Done()
	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; err != nil {
		return err
	}
	if err := httpapi.RemoveServeFile(root, os.Getpid()); err != nil {
		return err
	}
	return eng.Close()
}

// TestBenchRemember runs the remember bench against a server process
// (this test binary, see TestMain). No timing is asserted.
func TestBenchRemember(t *testing.T) {
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		t.Setenv(benchServerEnv, "serve")
		r, err := BenchRemember(ctx, t.TempDir(), RememberBenchOptions{Server: os.Args[0], Entries: 40, Callers: 2})
		require.NoError(t, err)
		assert.Equal(t, 40, r.Entries)
		assert.Equal(t, 2, r.Callers)
		assert.Equal(t, 40, r.Held, "entries held after 40 remembers")
		require.Len(t, r.Windows, 3)
		for i, want := range []struct {
			name  string
			calls int
		}{{"first 10%", 4}, {"last 10%", 4}, {"all", 40}} {
			w := r.Windows[i]
			assert.Equal(t, want.name, w.Name)
			assert.Equal(t, want.calls, w.Calls, "window %s", w.Name)
			assert.Positive(t, w.P50, "window %s", w.Name)
			assert.LessOrEqual(t, w.P50, w.P99, "window %s", w.Name)
		}
	})
	t.Run("ErrServerExits", func(t *testing.T) {
		t.Setenv(benchServerEnv, "fail")
		_, err := BenchRemember(ctx, t.TempDir(), RememberBenchOptions{Server: os.Args[0], Entries: 20})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "server exited before it was ready")
		assert.Contains(t, err.Error(), "refusing to serve")
	})
}

// TestRememberWindow: a window's rate is its calls over the time from
// its start to the last call's end, however the calls interleave.
func TestRememberWindow(t *testing.T) {
	t0 := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	lat := []time.Duration{3 * time.Millisecond, time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond}
	ends := []time.Time{t0.Add(2 * time.Second), t0.Add(500 * time.Millisecond), t0.Add(time.Second), t0.Add(1500 * time.Millisecond)}
	w := window("all", lat, t0, ends)
	assert.Equal(t, RememberWindow{Name: "all", Calls: 4, PerSecond: 2, P50: 3 * time.Millisecond, P99: 4 * time.Millisecond}, w)
	assert.Equal(t, 3*time.Millisecond, lat[0], "window sorted its caller's latencies")
	assert.Equal(t, RememberWindow{Name: "none"}, window("none", nil, t0, nil))
}
