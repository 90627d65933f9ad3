package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/observer/bench"
	"dshmem/observer/httpapi"
)

const benchRememberUsage = `bench remember [--entries N] [--callers C] [--json]

Starts 'dshmem serve --no-watch' as a child process over a fresh
temporary root (removed afterwards), waits for its serve.json, and sends
N POST /v1/remember calls over loopback HTTP, one memory a call, from C
concurrent callers, all into one workspace — as a host remembers, one
fact at a time, so the workspace grows to N entries during the run.
Prints writes/s and p50/p99 latency of the first and the last tenth of
the calls, so growth with the size of the memory shows, and checks that
the server holds all N entries. --root is not used.
`

// rememberWindow is the figures of one stretch of a remember run.
type rememberWindow struct {
	Name      string        `json:"name"`
	Calls     int           `json:"calls"`
	PerSecond float64       `json:"writesPerSecond"`
	P50       time.Duration `json:"p50"`
	P99       time.Duration `json:"p99"`
}

// benchRemember drives one remember per call against a real server
// process. A hidden --server BIN runs another build's server with the
// same client, so two builds compare side by side.
func benchRemember(ctx context.Context, env *cliEnv, args []string) error {
	c := &command{name: "bench", usage: benchRememberUsage}
	args, bin := cutHiddenFlag(args, "server")
	fs := newFlags(c)
	entries := fs.Int("entries", 3000, "remembers to send (the workspace ends with this many entries)")
	callers := fs.Int("callers", 1, "concurrent callers")
	asJSON := fs.Bool("json", false, "print results as JSON")
	if err := env.parseNoArgs(c, fs, args); err != nil {
		return err
	}
	if *entries < 20 || *entries > 10_000_000 || *callers < 1 || *callers > 1024 {
		return usageError{"--entries must be 20..10000000 and --callers 1..1024"}
	}
	if bin == "" {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find this binary: %w", err)
		}
		bin = self
	}
	root, err := os.MkdirTemp("", "dshmem-bench-remember-")
	if err != nil {
		return fmt.Errorf("make temporary root: %w", err)
	}
	defer os.RemoveAll(root)
	info, stop, err := startServerProcess(ctx, bin, root)
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *callers}, Timeout: 60 * time.Second}
	synth := bench.NewSynth(13)
	bodies := make([][]byte, *entries)
	for i := range bodies {
		imp := i % 4
		bodies[i], _ = json.Marshal(httpapi.RememberAPIRequest{Content: fmt.Sprintf("fact %d: %s", i, synth.Text(160)),
			Cwd: "/home/u/bench-remember", Type: payload.TypeFact, Importance: &imp})
	}
	lat := make([]time.Duration, *entries)
	end := make([]time.Time, *entries)
	var next atomic.Int64
	var failures atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < *callers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= *entries {
					return
				}
				t0 := time.Now()
				err := postJSON(ctx, client, info, "/v1/remember", bodies[i])
				end[i] = time.Now()
				lat[i] = end[i].Sub(t0)
				if err != nil {
					failures.Add(1)
					errOnce.Do(func() { firstErr = err })
				}
			}
		}()
	}
	wg.Wait()
	total := time.Since(start)
	stopped = true
	if err := stop(); err != nil {
		return err
	}
	if firstErr != nil {
		return fmt.Errorf("bench remember: %d of %d calls failed; the first: %w", failures.Load(), *entries, firstErr)
	}
	held, err := countEntries(ctx, root)
	if err != nil {
		return err
	}
	tenth := *entries / 10
	windows := []rememberWindow{
		window("first 10%", lat[:tenth], start, end[:tenth]),
		window("last 10%", lat[*entries-tenth:], end[*entries-tenth-1], end[*entries-tenth:]),
		window("all", lat, start, end),
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"entries": *entries, "callers": *callers, "held": held,
			"seconds": total.Seconds(), "windows": windows})
	}
	fmt.Fprintf(env.stdout, "%d remembers into one workspace, %d caller(s), one per call over loopback HTTP; %.1f s\n",
		*entries, *callers, total.Seconds())
	fmt.Fprintf(env.stdout, "%-10s %8s %12s %10s %10s\n", "calls", "n", "writes/s", "p50", "p99")
	for _, w := range windows {
		fmt.Fprintf(env.stdout, "%-10s %8d %12.0f %10s %10s\n", w.Name, w.Calls, w.PerSecond,
			w.P50.Round(10*time.Microsecond), w.P99.Round(10*time.Microsecond))
	}
	fmt.Fprintf(env.stdout, "entries held by the server: %d of %d\n", held, *entries)
	if held != *entries {
		return exitError{1}
	}
	return nil
}

// window summarizes calls that ran from 'from' until the last of ends.
func window(name string, lat []time.Duration, from time.Time, ends []time.Time) rememberWindow {
	s := slices.Clone(lat)
	slices.Sort(s)
	last := from
	for _, e := range ends {
		if e.After(last) {
			last = e
		}
	}
	w := rememberWindow{Name: name, Calls: len(s)}
	if el := last.Sub(from).Seconds(); el > 0 {
		w.PerSecond = float64(len(s)) / el
	}
	if len(s) > 0 {
		w.P50 = s[len(s)/2]
		w.P99 = s[min(len(s)-1, len(s)*99/100)]
	}
	return w
}

// startServerProcess runs `bin --root root serve --no-watch` and waits
// for the serve.json that names it (the server writes it once it
// listens). stop sends SIGTERM and waits for a clean exit.
func startServerProcess(ctx context.Context, bin, root string) (httpapi.ServeInfo, func() error, error) {
	cmd := exec.CommandContext(ctx, bin, "--root", root, "serve", "--no-watch")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return httpapi.ServeInfo{}, nil, fmt.Errorf("start %s serve: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() error {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				return fmt.Errorf("server exited: %w: %s", err, stderr.String())
			}
			return nil
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			return errors.New("server did not stop within 60 s of SIGTERM")
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		info, err := httpapi.ReadServeFile(root)
		if err == nil && info.PID == cmd.Process.Pid {
			return info, stop, nil
		}
		select {
		case err := <-exited:
			return httpapi.ServeInfo{}, nil, fmt.Errorf("server exited before it was ready: %v: %s", err, stderr.String())
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return httpapi.ServeInfo{}, nil, fmt.Errorf("server wrote no %s within 60 s", filepath.Join(root, httpapi.ServeFile))
		}
	}
}

// postJSON sends body to the server and requires a 200.
func postJSON(ctx context.Context, client *http.Client, info httpapi.ServeInfo, path string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+info.Addr+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+info.Token)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", path, resp.Status, bytes.TrimSpace(b))
	}
	return nil
}

// countEntries counts the active entries of a root no process holds.
func countEntries(ctx context.Context, root string) (int, error) {
	eng, err := observer.Open(ctx, root, observer.Options{ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer eng.Close()
	active, err := eng.Entries(ctx, observer.EntryFilter{Statuses: []string{"active"}})
	if err != nil {
		return 0, fmt.Errorf("count entries: %w", err)
	}
	return len(active), nil
}
