package bench

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
	"dshmem/observer/httpapi"
)

// RememberBenchOptions configure BenchRemember. The zero value works
// when this process is dshmem.
type RememberBenchOptions struct {
	// Server is the binary run as `Server --root ROOT serve --no-watch`;
	// "" → this process's executable. Another build's binary compares two
	// servers with the same client.
	Server  string
	Entries int // remembers to send (the workspace ends with this many entries); 0 → 3,000
	Callers int // concurrent callers; 0 → 1
}

// RememberBenchResult is what BenchRemember measured. Its fields are in
// the order of their JSON names, as `dshmem bench remember --json`
// printed them when they were a map.
type RememberBenchResult struct {
	Callers int     `json:"callers"`
	Entries int     `json:"entries"`
	Held    int     `json:"held"` // active entries in the root after the run
	Seconds float64 `json:"seconds"`
	// ServerCPUPerRemember is the user+system CPU time the server process used over
	// its whole life (open, the calls, shutdown), divided by Entries:
	// on a shared machine a steadier figure than writes/s.
	ServerCPUPerRemember time.Duration    `json:"serverCPUPerRemember"`
	Windows              []RememberWindow `json:"windows"` // the first 10% of the calls, the last 10%, all
}

// RememberWindow is the figures of one stretch of a remember run.
type RememberWindow struct {
	Name      string        `json:"name"`
	Calls     int           `json:"calls"`
	PerSecond float64       `json:"writesPerSecond"`
	P50       time.Duration `json:"p50"`
	P99       time.Duration `json:"p99"`
}

// BenchRemember starts a server process over root (fresh, and no other
// process's), waits for its serve.json, and sends o.Entries POST
// /v1/remember calls over loopback HTTP, one memory a call, from
// o.Callers concurrent callers, all into one workspace — as a host
// remembers, one fact at a time, so the workspace grows during the run.
// After the server has stopped it counts the entries the root holds.
func BenchRemember(ctx context.Context, root string, o RememberBenchOptions) (RememberBenchResult, error) {
	if o.Entries <= 0 {
		o.Entries = 3000
	}
	if o.Callers <= 0 {
		o.Callers = 1
	}
	if o.Server == "" {
		self, err := os.Executable()
		if err != nil {
			return RememberBenchResult{}, fmt.Errorf("find this binary: %w", err)
		}
		o.Server = self
	}
	var cpu time.Duration
	info, stop, err := startServerProcess(ctx, o.Server, root, &cpu)
	if err != nil {
		return RememberBenchResult{}, err
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.Callers}, Timeout: 60 * time.Second}
	synth := NewSynth(13)
	bodies := make([][]byte, o.Entries)
	for i := range bodies {
		imp := i % 4
		bodies[i], _ = json.Marshal(httpapi.RememberAPIRequest{Content: fmt.Sprintf("fact %d: %s", i, synth.Text(160)),
			Cwd: "/home/u/bench-remember", Type: payload.TypeFact, Importance: &imp})
	}
	lat := make([]time.Duration, o.Entries)
	end := make([]time.Time, o.Entries)
	var next atomic.Int64
	var failures atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < o.Callers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= o.Entries {
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
		return RememberBenchResult{}, err
	}
	if firstErr != nil {
		return RememberBenchResult{}, fmt.Errorf("bench remember: %d of %d calls failed; the first: %w", failures.Load(), o.Entries, firstErr)
	}
	held, err := countEntries(ctx, root)
	if err != nil {
		return RememberBenchResult{}, err
	}
	tenth := o.Entries / 10
	return RememberBenchResult{Callers: o.Callers, Entries: o.Entries, Held: held, Seconds: total.Seconds(),
		ServerCPUPerRemember: cpu / time.Duration(o.Entries),
		Windows: []RememberWindow{
			window("first 10%", lat[:tenth], start, end[:tenth]),
			window("last 10%", lat[o.Entries-tenth:], end[o.Entries-tenth-1], end[o.Entries-tenth:]),
			window("all", lat, start, end),
		}}, nil
}

// window summarizes calls that ran from 'from' until the last of ends.
func window(name string, lat []time.Duration, from time.Time, ends []time.Time) RememberWindow {
	s := slices.Clone(lat)
	slices.Sort(s)
	last := from
	for _, e := range ends {
		if e.After(last) {
			last = e
		}
	}
	w := RememberWindow{Name: name, Calls: len(s), P50: percentile(s, 0.50), P99: percentile(s, 0.99)}
	if el := last.Sub(from).Seconds(); el > 0 {
		w.PerSecond = float64(len(s)) / el
	}
	return w
}

// startServerProcess runs `bin --root root serve --no-watch` and waits
// for the serve.json that names it (the server writes it once it
// listens). stop sends SIGTERM and waits for a clean exit, then sets
// *cpu to the CPU time (user+system) the process used.
func startServerProcess(ctx context.Context, bin, root string, cpu *time.Duration) (httpapi.ServeInfo, func() error, error) {
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
			*cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
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
