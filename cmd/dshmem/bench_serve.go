package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/observer/httpapi"
)

// serveBenchTopics give each bench workspace its own words, so recalls
// and packets have something to find.
var serveBenchTopics = []string{"database migrations", "deploy pipeline", "frontend build", "auth tokens rotation",
	"cache invalidation", "logging format", "test fixtures", "docker images"}

// benchServe drives concurrent sessions against a real server over
// loopback: push events, recall, fetch packets; then checks that every
// pushed event is in the log.
func benchServe(ctx context.Context, env *cliEnv, args []string) error {
	c := &command{name: "bench", usage: benchServeUsage}
	args, profile := cutHiddenFlag(args, "cpuprofile")
	fs := newFlags(c)
	sessions := fs.Int("sessions", 16, "concurrent sessions")
	seconds := fs.Int("seconds", 60, "how long to drive them")
	asJSON := fs.Bool("json", false, "print results as JSON")
	if err := env.parseNoArgs(c, fs, args); err != nil {
		return err
	}
	if *sessions < 1 || *sessions > 1024 || *seconds < 1 || *seconds > 3600 {
		return usageError{"--sessions must be 1..1024 and --seconds 1..3600"}
	}
	stop, err := startCPUProfile(profile)
	if err != nil {
		return err
	}
	defer stop()
	root, err := os.MkdirTemp("", "dshmem-bench-serve-")
	if err != nil {
		return fmt.Errorf("make temporary root: %w", err)
	}
	defer os.RemoveAll(root)
	eng, err := observer.Open(ctx, root, observer.Options{})
	if err != nil {
		return err
	}
	defer eng.Close()
	srv, err := httpapi.NewServer(eng, httpapi.ServerOptions{AutoCheckpoint: -1, MaxInFlight: 4 * *sessions})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	base := "http://" + l.Addr().String()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4 * *sessions}, Timeout: 30 * time.Second}
	call := func(method, path string, body []byte) (int, error) {
		req, _ := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(body))
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
				return fmt.Errorf("seed entries: %d %v", code, err)
			}
		}
	}
	type sample struct {
		route string
		d     time.Duration
	}
	var mu sync.Mutex
	lat := map[string][]time.Duration{}
	errorsBy := map[string]int{}
	pushed := map[string][]string{} // stream → ids
	deadline := time.Now().Add(time.Duration(*seconds) * time.Second)
	var wg sync.WaitGroup
	start := time.Now()
	for s := range *sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := s % len(serveBenchTopics)
			cwd := fmt.Sprintf("/bench/ws%d", w)
			sid := fmt.Sprintf("bench-%d", s)
			stream := observer.StreamForCwd(cwd)
			var local []sample
			var ids []string
			errs := map[string]int{}
			timed := func(route, method, path string, body []byte, ok ...int) {
				t0 := time.Now()
				code, err := call(method, path, body)
				local = append(local, sample{route, time.Since(t0)})
				if err != nil || !slices.Contains(ok, code) {
					errs[route]++
				}
			}
			for n := 0; time.Now().Before(deadline) && ctx.Err() == nil; n++ {
				var evs []events.Envelope
				mk := func(p payload.Payload) {
					id := fmt.Sprintf("%s:%d:%d", sid, n, len(evs))
					ids = append(ids, id)
					data, _ := payload.Marshal(p) // plain structs: cannot fail
					evs = append(evs, events.Envelope{V: events.CurrentVersion, ID: id, Type: p.EventType(),
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
				timed("events", "POST", "/v1/events", b, 200)
				q, _ := json.Marshal(map[string]any{"query": fmt.Sprintf("%s item %d", serveBenchTopics[w], n%25), "cwd": cwd, "session": sid})
				timed("recall", "POST", "/v1/recall", q, 200)
				timed("packet", "GET", fmt.Sprintf("/v1/sessions/%s/packet?step=%d", sid, n), nil, 200, 204)
			}
			mu.Lock()
			for _, x := range local {
				lat[x.route] = append(lat[x.route], x.d)
			}
			for k, v := range errs {
				errorsBy[k] += v
			}
			pushed[stream] = append(pushed[stream], ids...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	<-done
	// Every pushed event must be in the log.
	total, lost := 0, 0
	for stream, ids := range pushed {
		total += len(ids)
		logged := map[string]bool{}
		err := eng.Log().Scan(stream, 0, func(e events.Envelope) error {
			logged[e.ID] = true
			return nil
		})
		if err != nil {
			return fmt.Errorf("read the log of %s: %w", stream, err)
		}
		for _, id := range ids {
			if !logged[id] {
				lost++
			}
		}
	}
	m := srv.Metrics()
	packets := struct {
		Computed   uint64            `json:"computed"`
		Discarded  uint64            `json:"discarded"`
		Served     uint64            `json:"served"`
		Suppressed map[string]uint64 `json:"suppressed"`
	}{m.PacketsComputed.Load(), m.PacketsDiscarded.Load(), m.PacketsServed.Load(), m.Suppressed()}
	intakeCalls := m.IntakeCalls.Load()
	type routeStats struct {
		Route    string  `json:"route"`
		Requests int     `json:"requests"`
		Errors   int     `json:"errors"`
		P50ms    float64 `json:"p50Ms"`
		P99ms    float64 `json:"p99Ms"`
	}
	res := struct {
		Sessions     int          `json:"sessions"`
		Seconds      float64      `json:"seconds"`
		Events       int          `json:"events"`
		EventsPerSec float64      `json:"eventsPerSec"`
		Lost         int          `json:"lost"`
		IntakeCalls  uint64       `json:"intakeCalls"`
		Packets      any          `json:"packets"`
		Routes       []routeStats `json:"routes"`
	}{Sessions: *sessions, Seconds: elapsed.Seconds(), Events: total, EventsPerSec: float64(total) / elapsed.Seconds(), Lost: lost,
		IntakeCalls: intakeCalls, Packets: packets}
	for _, r := range []string{"events", "recall", "packet"} {
		ds := lat[r]
		slices.Sort(ds)
		q := func(p float64) float64 {
			if len(ds) == 0 {
				return 0
			}
			return float64(ds[min(len(ds)-1, int(p*float64(len(ds))))].Microseconds()) / 1000
		}
		res.Routes = append(res.Routes, routeStats{r, len(ds), errorsBy[r], q(0.50), q(0.99)})
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		enc.Encode(res)
	} else {
		fmt.Fprintf(env.stdout, "serve: %d sessions for %.1fs over loopback: %d events pushed, %.0f events/s, %d lost\n",
			res.Sessions, res.Seconds, res.Events, res.EventsPerSec, res.Lost)
		for _, r := range res.Routes {
			fmt.Fprintf(env.stdout, "  %-7s %7d requests  p50 %7.2f ms  p99 %7.2f ms  %d errors\n", r.Route, r.Requests, r.P50ms, r.P99ms, r.Errors)
		}
		notServed := "none"
		if len(packets.Suppressed) > 0 {
			notServed = countsText(packets.Suppressed)
		}
		fmt.Fprintf(env.stdout, "  packets: %d computed (%d discarded as stale), %d served, not served: %s; %d intake calls\n",
			packets.Computed, packets.Discarded, packets.Served, notServed, intakeCalls)
	}
	errCount := 0
	for _, r := range res.Routes {
		errCount += r.Errors
	}
	if lost > 0 || errCount > 0 {
		return fmt.Errorf("bench serve: %d events lost, %d request errors", lost, errCount)
	}
	return nil
}

// startCPUProfile writes a CPU profile to path until stop is called;
// path "" profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("start CPU profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// cutHiddenFlag takes --name FILE or --name=FILE out of args: a flag
// for whoever tunes dshmem, kept out of --help.
func cutHiddenFlag(args []string, name string) ([]string, string) {
	var out []string
	val := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		flagName, v, hasV := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || flagName != name {
			out = append(out, a)
			continue
		}
		if !hasV && i+1 < len(args) {
			i++
			v = args[i]
		}
		val = v
	}
	return out, val
}

const benchServeUsage = `bench serve [--sessions N] [--seconds S] [--json]

Runs a real server (no DSH watcher, no automatic checkpoints) over a
fresh temporary root, removed afterwards, on 127.0.0.1, seeds 25 memory
entries in each of 8 workspaces, and drives N concurrent sessions
(spread over the 8 workspaces) against it for S seconds. Each session
loops, with no pause between steps, over what an agent host does
around one model step:
  1. POST /v1/events: one user/message, one tool/call, one tool/result
     (every 5th fails) and one assistant/message (with session/start
     first), as one JSON array;
  2. POST /v1/recall with the session (so the shown entries are recorded
     as memory/shown events, as for a real host);
  3. GET /v1/sessions/{id}/packet?step=n, the fetch before the next model
     step (200 or 204 are both fine).
With no pause, the sessions keep both cores busy: the latencies are
those of a saturated server. Prints p50/p99 per route, events/s,
packets computed, served and not served (by reason), and intake calls;
then checks that every pushed event is in the log (lost must be 0).
Exits 1 on any lost event or request error. --root is not used.
`
