package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/observer/httpapi"
	"dshmem/sqlstore/vectors"
)

// ServeBenchOptions configure BenchServe. The zero value works.
type ServeBenchOptions struct {
	Sessions int           // concurrent sessions; 0 → 16
	Duration time.Duration // how long to drive them; 0 → 60 s
	// Slow is how many hostile clients run beside the sessions, each
	// sending its headers and then a body one byte every 2 s, again as
	// soon as the server cuts it off (0: none).
	Slow int
	// Sample is how often the process's memory, goroutines and file
	// descriptors are sampled (0 → 10 s).
	Sample time.Duration
	// Pace is how long each session waits after each step, as a host
	// waits for the model between steps (0: no pause, a closed loop
	// that saturates the server).
	Pace time.Duration
	// MemProfile, if set, is where a heap profile is written after a GC
	// once the sessions stop, before the server does (what it still
	// holds); MemProfile+".first" gets one at the first sample under
	// load, so `go tool pprof -base F.first F` shows what grew.
	MemProfile string
	// Model, when set, gives the server the sentence encoder: its
	// English events get vectors in the background while the sessions
	// run (Encoders at once, 0 → 1), and recalls and packets fuse them,
	// as `dshmem serve` does with the model installed.
	Model    *vectors.Model
	Encoders int
}

// ServeBenchResult is what BenchServe measured. Lost, Duplicated and
// the routes' Errors are results, not errors: BenchServe returns them with a nil
// error, and the caller decides what a lost event means.
type ServeBenchResult struct {
	Sessions     int     `json:"sessions"`
	PaceMs       float64 `json:"paceMs"` // each session's pause after a step
	Seconds      float64 `json:"seconds"`
	Events       int     `json:"events"` // pushed
	EventsPerSec float64 `json:"eventsPerSec"`
	Lost         int     `json:"lost"`       // pushed and acknowledged, but not in the log
	Duplicated   int     `json:"duplicated"` // acknowledged and in the log more than once
	IntakeCalls  uint64  `json:"intakeCalls"`
	// Vectors is the background fill at the end of the run (with Model).
	Vectors    *observer.VectorsStatus `json:"vectors,omitempty"`
	Packets    ServeBenchPackets       `json:"packets"`
	Routes     []ServeBenchRoute       `json:"routes"` // events, recall, packet, healthz
	Slow       int                     `json:"slow"`   // hostile slow-body clients beside the sessions
	SlowCutOff int                     `json:"slowCutOff"`
	// Samples are the process's resources over the run (client and
	// server share the process, so the counts include the clients').
	Samples []ServeBenchSample `json:"samples"`
}

// ServeBenchSample is one sample of the process's resources.
type ServeBenchSample struct {
	Seconds float64 `json:"seconds"`
	RSSMiB  float64 `json:"rssMiB"`
	// GoMiB is what the Go runtime holds from the OS (mapped and not
	// released: heap, stacks, its own metadata), client and server
	// alike; what RSS holds beyond it is mostly SQLite's memory (the
	// index's page caches, allocated outside the Go heap by modernc's
	// libc), which only the server has.
	GoMiB   float64 `json:"goMiB"`
	HeapMiB float64 `json:"heapMiB"` // Go heap in use (live and not yet swept)
	// LiveMiB is the Go heap still reachable after a GC forced for the
	// sample, client and server; the client's part does not grow with
	// the run (a histogram a route, a ledger a session), so its growth
	// is the server's.
	LiveMiB    float64 `json:"liveMiB"`
	Goroutines int     `json:"goroutines"`
	FDs        int     `json:"fds"`
}

// ServeBenchPackets are the server's packet counters at the end of a run.
type ServeBenchPackets struct {
	Computed   uint64            `json:"computed"`
	Discarded  uint64            `json:"discarded"` // computed for a version that moved on
	Served     uint64            `json:"served"`
	Suppressed map[string]uint64 `json:"suppressed"` // not served, by reason
}

// ServeBenchRoute is the latency of one route over a run.
type ServeBenchRoute struct {
	Route    string  `json:"route"`
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"` // transport errors and unexpected status codes
	P50ms    float64 `json:"p50Ms"`
	P99ms    float64 `json:"p99Ms"`
}

// Errors is the request errors of every route.
func (r ServeBenchResult) Errors() int {
	n := 0
	for _, rt := range r.Routes {
		n += rt.Errors
	}
	return n
}

// serveBenchTopics give each bench workspace its own words, so recalls
// and packets have something to find.
var serveBenchTopics = []string{"database migrations", "deploy pipeline", "frontend build", "auth tokens rotation",
	"cache invalidation", "logging format", "test fixtures", "docker images"}

// serveBenchRoutes are the routes a session drives, in the order they
// are reported.
var serveBenchRoutes = []string{"events", "recall", "packet", "healthz"}

// BenchServe runs a real server (no DSH watcher, no automatic
// checkpoints) over a fresh root on 127.0.0.1, seeds 25 entries in each
// of 8 workspaces, and drives o.Sessions concurrent sessions against it
// over loopback HTTP for o.Duration, each looping with no pause over
// what a host does around one model step: POST four events, recall with
// the session, fetch the packet. Then it checks that every acknowledged
// event is in the log exactly once.
func BenchServe(ctx context.Context, root string, o ServeBenchOptions) (ServeBenchResult, error) {
	if o.Sessions <= 0 {
		o.Sessions = 16
	}
	if o.Duration <= 0 {
		o.Duration = 60 * time.Second
	}
	if o.Sample <= 0 {
		o.Sample = 10 * time.Second
	}
	// The profiles' files are made first, so a bad path fails before
	// the run, not after it.
	var firstProf, endProf *os.File
	if o.MemProfile != "" {
		var err error
		if endProf, err = os.Create(o.MemProfile); err != nil {
			return ServeBenchResult{}, fmt.Errorf("create heap profile: %w", err)
		}
		defer endProf.Close()
		if firstProf, err = os.Create(o.MemProfile + ".first"); err != nil {
			return ServeBenchResult{}, fmt.Errorf("create heap profile: %w", err)
		}
		defer firstProf.Close()
		// Every 4 KiB allocated, not every 512 KiB: a slow growth
		// shows in a diff of two profiles.
		runtime.MemProfileRate = 4096
	}
	eng, err := observer.Open(ctx, root, observer.Options{})
	if err != nil {
		return ServeBenchResult{}, err
	}
	defer eng.Close()
	if o.Model != nil {
		eng.StartVectors(vectors.NewDense(o.Model), max(o.Encoders, 1))
	}
	srv, err := httpapi.NewServer(eng, httpapi.ServerOptions{AutoCheckpoint: -1, MaxInFlight: 4 * o.Sessions})
	if err != nil {
		return ServeBenchResult{}, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return ServeBenchResult{}, fmt.Errorf("listen: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	// The server must stop on every path, or its goroutines outlive the
	// root they hold.
	stopped := false
	stop := func() error {
		stopped = true
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			return fmt.Errorf("shut down: %w", err)
		}
		<-done
		return nil
	}
	defer func() {
		if !stopped {
			stop()
		}
	}()
	base := "http://" + l.Addr().String()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4 * o.Sessions}, Timeout: 30 * time.Second}
	call := func(method, path string, body []byte) (int, error) {
		req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	// Seed: 25 entries per workspace.
	for w, topic := range serveBenchTopics {
		for i := range 25 {
			b, _ := json.Marshal(map[string]any{"content": fmt.Sprintf("For %s, rule %d: check the %s checklist item %d before merging", topic, i, topic, i),
				"cwd": fmt.Sprintf("/bench/ws%d", w), "type": payload.TypeProcedure})
			if code, err := call("POST", "/v1/remember", b); err != nil || code != 200 {
				return ServeBenchResult{}, fmt.Errorf("seed entries: %d %v", code, err)
			}
		}
	}
	// The client holds what does not grow with the run, so the samples
	// show the server's memory: a histogram a route, and a ledger a
	// session instead of every pushed id.
	lat := map[string]*histogram{}
	for _, r := range serveBenchRoutes {
		lat[r] = new(histogram)
	}
	var mu sync.Mutex
	errorsBy := map[string]int{}
	ledgers := make([]pushLedger, o.Sessions)
	deadline := time.Now().Add(o.Duration)
	var wg sync.WaitGroup
	start := time.Now()
	for s := range o.Sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := s % len(serveBenchTopics)
			cwd := fmt.Sprintf("/bench/ws%d", w)
			sid := benchSessionID(s)
			ledger := pushLedger{Stream: observer.StreamForCwd(cwd)}
			defer func() { ledgers[s] = ledger }()
			// Paced sessions start spread over one pace, as hosts
			// whose models answer at different moments, not in step.
			if !pause(ctx, stagger(s, o.Sessions, o.Pace), deadline) {
				return
			}
			errs := map[string]int{}
			timed := func(route, method, path string, body []byte, ok ...int) bool {
				t0 := time.Now()
				code, err := call(method, path, body)
				lat[route].Add(time.Since(t0))
				if err != nil || !slices.Contains(ok, code) {
					errs[route]++
					return false
				}
				return true
			}
			for n := 0; time.Now().Before(deadline) && ctx.Err() == nil; n++ {
				if n > 0 && !pause(ctx, o.Pace, deadline) {
					break
				}
				var evs []events.Envelope
				mk := func(p payload.Payload) {
					data, _ := payload.Marshal(p) // plain structs: cannot fail
					evs = append(evs, events.Envelope{V: events.CurrentVersion, ID: benchEventID(s, n, len(evs)), Type: p.EventType(),
						Time: time.Now().UTC().Format(time.RFC3339Nano), Session: sid, Cwd: cwd, Data: data})
				}
				if n == 0 {
					mk(payload.SessionStart{Origin: payload.OriginTop})
				}
				mk(payload.UserMessage{Text: fmt.Sprintf("step %d: what about the %s checklist item %d?", n, serveBenchTopics[w], n%25)})
				args, _ := json.Marshal(map[string]string{"cmd": fmt.Sprintf("make check-%d", n)})
				mk(payload.ToolCall{Name: "bash", Args: args})
				mk(payload.ToolResult{Name: "bash", OK: new(n%5 != 0), Text: "done"})
				mk(payload.AssistantMessage{Text: fmt.Sprintf("checked item %d", n), Step: n})
				b, _ := json.Marshal(evs)
				ledger.Steps++
				if !timed("events", "POST", "/v1/events", b, 200) {
					ledger.Failed = append(ledger.Failed, n)
				}
				q, _ := json.Marshal(map[string]any{"query": fmt.Sprintf("%s item %d", serveBenchTopics[w], n%25), "cwd": cwd, "session": sid})
				timed("recall", "POST", "/v1/recall", q, 200)
				timed("packet", "GET", fmt.Sprintf("/v1/sessions/%s/packet?step=%d", sid, n), nil, 200, 204)
			}
			mu.Lock()
			for k, v := range errs {
				errorsBy[k] += v
			}
			mu.Unlock()
		}()
	}
	// A health prober (what a host's heartbeat does), the hostile slow
	// clients and the resource sampler run beside the sessions.
	var side sync.WaitGroup
	side.Add(1)
	go func() {
		defer side.Done()
		bad := 0
		for time.Now().Before(deadline) && ctx.Err() == nil {
			t0 := time.Now()
			code, err := call("GET", "/v1/healthz", nil)
			lat["healthz"].Add(time.Since(t0))
			if err != nil || code != 200 {
				bad++
			}
			time.Sleep(50 * time.Millisecond)
		}
		mu.Lock()
		errorsBy["healthz"] += bad
		mu.Unlock()
	}()
	var cutOff atomic.Int64
	for range o.Slow {
		side.Add(1)
		go func() {
			defer side.Done()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				if slowBody(ctx, l.Addr().String(), srv.Token(), deadline) {
					cutOff.Add(1)
				}
			}
		}()
	}
	var samples []ServeBenchSample
	var profErr error
	side.Add(1)
	go func() {
		defer side.Done()
		t := time.NewTicker(o.Sample)
		defer t.Stop()
		samples = append(samples, sampleProcess(0))
		for {
			select {
			case <-t.C:
				samples = append(samples, sampleProcess(time.Since(start).Seconds()))
				if len(samples) == 2 && firstProf != nil {
					if err := writeHeapProfile(firstProf); err != nil {
						profErr = err
					}
				}
				if time.Now().After(deadline) {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	wg.Wait()
	elapsed := time.Since(start)
	side.Wait()
	if profErr != nil {
		return ServeBenchResult{}, profErr
	}
	if endProf != nil {
		if err := writeHeapProfile(endProf); err != nil {
			return ServeBenchResult{}, err
		}
	}
	if err := stop(); err != nil {
		return ServeBenchResult{}, err
	}
	// Every acknowledged event must be in the log, once.
	check := newLogCheck(ledgers)
	streams := map[string]bool{}
	for _, l := range ledgers {
		if streams[l.Stream] {
			continue
		}
		streams[l.Stream] = true
		err := eng.Log().Scan(l.Stream, 0, func(e events.Envelope) error {
			check.see(l.Stream, e.ID)
			return nil
		})
		if err != nil {
			return ServeBenchResult{}, fmt.Errorf("read the log of %s: %w", l.Stream, err)
		}
	}
	total, lost, dup := check.result()
	m := srv.Metrics()
	res := ServeBenchResult{Sessions: o.Sessions, PaceMs: millis(o.Pace), Slow: o.Slow, SlowCutOff: int(cutOff.Load()), Samples: samples,
		Seconds: elapsed.Seconds(), Events: total,
		EventsPerSec: float64(total) / elapsed.Seconds(), Lost: lost, Duplicated: dup, IntakeCalls: m.IntakeCalls.Load(),
		Packets: ServeBenchPackets{Computed: m.PacketsComputed.Load(), Discarded: m.PacketsDiscarded.Load(),
			Served: m.PacketsServed.Load(), Suppressed: m.Suppressed()}, Vectors: eng.VectorsStatus()}
	for _, r := range serveBenchRoutes {
		h := lat[r]
		res.Routes = append(res.Routes, ServeBenchRoute{Route: r, Requests: h.Count(), Errors: errorsBy[r],
			P50ms: millis(h.Quantile(0.50)), P99ms: millis(h.Quantile(0.99))})
	}
	return res, nil
}

// stagger is how long session s of n waits before its first step: the
// starts spread evenly over one pace (0 with no pace).
func stagger(s, n int, pace time.Duration) time.Duration {
	if pace <= 0 || n <= 0 {
		return 0
	}
	return pace * time.Duration(s%n) / time.Duration(n)
}

// pause waits d before a session's next step, as a host waits for the
// model; false when the run ends (its deadline or ctx) first, so no step
// starts after the deadline. d ≤ 0 does not wait.
func pause(ctx context.Context, d time.Duration, deadline time.Time) bool {
	if d <= 0 {
		return true
	}
	if time.Until(deadline) <= d {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// slowBody is one hostile client: it sends a request's headers and then
// its body one byte every 2 seconds until the server cuts it off (true)
// or the run ends.
func slowBody(ctx context.Context, addr, token string, deadline time.Time) bool {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		time.Sleep(100 * time.Millisecond)
		return false
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/search HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 100000\r\n\r\n", token)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if _, err := conn.Write([]byte(" ")); err != nil {
			return true
		}
		conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 512)
		if n, err := conn.Read(buf); n > 0 || err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return true // answered (408) or closed
		}
	}
	return false
}

// sampleProcess reads this process's resident memory, goroutines and
// open file descriptors (Linux; zero where /proc is missing), and its
// live heap after a forced GC (read last, so the other figures are the
// run's own).
func sampleProcess(at float64) ServeBenchSample {
	s := ServeBenchSample{Seconds: at, Goroutines: runtime.NumGoroutine()}
	m := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	metrics.Read(m)
	const mib = 1 << 20
	s.GoMiB = float64(m[0].Value.Uint64()-m[1].Value.Uint64()) / mib
	s.HeapMiB = float64(m[2].Value.Uint64()+m[3].Value.Uint64()) / mib
	runtime.GC()
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	s.LiveMiB = float64(live[0].Value.Uint64()) / mib
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		s.FDs = len(ents)
	}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				var kb float64
				fmt.Sscanf(strings.TrimSpace(v), "%f", &kb)
				s.RSSMiB = kb / 1024
			}
		}
	}
	return s
}

// writeHeapProfile writes to f a heap profile of what is live after a
// GC, and closes f.
func writeHeapProfile(f *os.File) error {
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("write heap profile %s: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write heap profile %s: %w", f.Name(), err)
	}
	return nil
}
