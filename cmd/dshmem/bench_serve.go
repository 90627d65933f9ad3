package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"dshmem/observer/bench"
	"dshmem/sqlstore/vectors"
)

// benchServe drives concurrent sessions against a real server over
// loopback (bench.BenchServe) and prints what it measured; any lost
// event or request error fails the command.
func benchServe(ctx context.Context, env *cliEnv, args []string) error {
	c := &command{name: "bench", usage: benchServeUsage}
	args, profile := cutHiddenFlag(args, "cpuprofile")
	args, memProfile := cutHiddenFlag(args, "memprofile")
	fs := newFlags(c)
	sessions := fs.Int("sessions", 16, "concurrent sessions")
	seconds := fs.Int("seconds", 60, "how long to drive them")
	slow := fs.Int("slow", 0, "hostile clients sending their bodies one byte every 2 s beside the sessions")
	sample := fs.Int("sample-seconds", 10, "how often memory, goroutines and descriptors are sampled")
	pace := fs.Duration("pace", 0, "each session's pause after each step, as a host waits for the model (e.g. 1s; 0: no pause)")
	encoders := fs.Int("encoders", 0, "with the sentence encoder installed, fill vectors with this many encoders while the sessions run, as serve does (0: no vectors)")
	asJSON := fs.Bool("json", false, "print results as JSON")
	if err := env.parseNoArgs(c, fs, args); err != nil {
		return err
	}
	if *sessions < 1 || *sessions > 1024 || *seconds < 1 || *seconds > 3600 || *slow < 0 || *slow > 2000 || *sample < 1 {
		return usageError{"--sessions must be 1..1024, --seconds 1..3600, --slow 0..2000 and --sample-seconds at least 1"}
	}
	if *pace < 0 || *pace > time.Minute {
		return usageError{fmt.Sprintf("--pace %s: must be between 0 (no pause) and 1m, e.g. --pace 1s", *pace)}
	}
	if *encoders < 0 || *encoders > maxEncoders {
		return usageError{fmt.Sprintf("--encoders %d is out of range (0: no vectors, up to %d)", *encoders, maxEncoders)}
	}
	var model *vectors.Model
	if *encoders > 0 {
		if model = loadEncoder(env); model == nil {
			return errors.New("bench serve --encoders: the sentence encoder is not installed or did not load: run 'dshmem model install', or leave --encoders out")
		}
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
	res, err := bench.BenchServe(ctx, root, bench.ServeBenchOptions{Sessions: *sessions, Duration: time.Duration(*seconds) * time.Second,
		Slow: *slow, Sample: time.Duration(*sample) * time.Second, Pace: *pace, MemProfile: memProfile,
		Model: model, Encoders: *encoders})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		enc.Encode(res)
	} else {
		paced := "no pause between steps"
		if *pace > 0 {
			paced = fmt.Sprintf("a %s pause after each step", *pace)
		}
		dup := ""
		if res.Duplicated > 0 {
			dup = fmt.Sprintf(", %d in the log twice", res.Duplicated)
		}
		fmt.Fprintf(env.stdout, "serve: %d sessions (%s) for %.1fs over loopback: %d events pushed, %.0f events/s, %d lost%s\n",
			res.Sessions, paced, res.Seconds, res.Events, res.EventsPerSec, res.Lost, dup)
		for _, r := range res.Routes {
			fmt.Fprintf(env.stdout, "  %-7s %7d requests  p50 %7.2f ms  p99 %7.2f ms  %d errors\n", r.Route, r.Requests, r.P50ms, r.P99ms, r.Errors)
		}
		notServed := "none"
		if len(res.Packets.Suppressed) > 0 {
			notServed = countsText(res.Packets.Suppressed)
		}
		fmt.Fprintf(env.stdout, "  packets: %d computed (%d discarded as stale), %d served, not served: %s; %d intake calls\n",
			res.Packets.Computed, res.Packets.Discarded, res.Packets.Served, notServed, res.IntakeCalls)
		if v := res.Vectors; v != nil {
			fmt.Fprintf(env.stdout, "  vectors: %d encoders beside the sessions, %d texts encoded, %d not English, still filling at the end: %v\n",
				v.Encoders, v.Encoded, v.NotEnglish, v.Filling)
		}
		if res.Slow > 0 {
			fmt.Fprintf(env.stdout, "  slow clients: %d beside the sessions, cut off %d times\n", res.Slow, res.SlowCutOff)
		}
		if n := len(res.Samples); n > 1 {
			first, last := res.Samples[0], res.Samples[n-1]
			minRSS, maxRSS, maxG, maxFD := first.RSSMiB, first.RSSMiB, first.Goroutines, first.FDs
			for _, x := range res.Samples[1:] {
				minRSS, maxRSS = min(minRSS, x.RSSMiB), max(maxRSS, x.RSSMiB)
				maxG, maxFD = max(maxG, x.Goroutines), max(maxFD, x.FDs)
			}
			// The first sample is before any load; the second is the
			// first under it, which a steady process stays near.
			second := res.Samples[1]
			fmt.Fprintf(env.stdout, "  process (client and server): RSS %.0f MiB at start, %.0f under load at first, %.0f at the end (min %.0f, max %.0f); goroutines %d → %d (max %d); descriptors %d → %d (max %d); %d samples\n",
				first.RSSMiB, second.RSSMiB, last.RSSMiB, minRSS, maxRSS, second.Goroutines, last.Goroutines, maxG, second.FDs, last.FDs, maxFD, n)
			fmt.Fprintf(env.stdout, "  memory: Go runtime (client and server) %.0f → %.0f MiB (heap %.0f → %.0f, live after a GC %.1f → %.1f); the rest of RSS, mostly SQLite's page caches (server only), %.0f → %.0f MiB\n",
				second.GoMiB, last.GoMiB, second.HeapMiB, last.HeapMiB, second.LiveMiB, last.LiveMiB, second.RSSMiB-second.GoMiB, last.RSSMiB-last.GoMiB)
			fmt.Fprintf(env.stdout, "  samples (s: RSS/Go/rest MiB):")
			for _, x := range res.Samples {
				fmt.Fprintf(env.stdout, " %.0f:%.0f/%.0f/%.0f", x.Seconds, x.RSSMiB, x.GoMiB, x.RSSMiB-x.GoMiB)
			}
			fmt.Fprintln(env.stdout)
		}
	}
	if res.Lost > 0 || res.Duplicated > 0 || res.Errors() > 0 {
		return fmt.Errorf("bench serve: %d events lost, %d in the log twice, %d request errors", res.Lost, res.Duplicated, res.Errors())
	}
	return nil
}

const benchServeUsage = `bench serve [--sessions N] [--seconds S] [--pace D] [--slow K] [--sample-seconds T] [--encoders N] [--json]

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
With no pause (the default), the sessions keep every core busy: the
latencies are those of a saturated server, and they grow with N by
queueing alone (N sessions waiting on the same throughput). --pace D
makes each session wait D after each step, as a host waits for its
model (a model step rarely takes under a second: --pace 1s); paced
sessions start spread over one D, not in step. Prints p50/p99 per route
(from a log-spaced histogram, within 0.5% of the exact sample), events/s,
packets computed, served and not served (by reason), and intake calls;
then checks that every acknowledged event is in the log exactly once
(lost must be 0).
Beside the sessions, a prober calls GET /v1/healthz every 50 ms (its
latency is the healthz row), and --slow K hostile clients each send a
request's headers and then its body one byte every 2 s, again as soon as
the server cuts them off (it answers 408 after its body timeout). Every
T seconds the process's resident memory, goroutines and file descriptors
are sampled (client and server share the process). A soak:
  dshmem bench serve --sessions 64 --slow 300 --seconds 600 --pace 1s
The memory line splits RSS into what the Go runtime holds (client and
server) and the rest, mostly SQLite's page caches (server only), and
gives the Go heap still live after a GC forced at each sample. The
client holds a fixed histogram a route and a count of steps a session
(the lost check reads the log against them), not a sample a request
or an id an event, so what grows is the server's.
--encoders N (with 'dshmem model install' done) gives the server the
sentence encoder, as 'dshmem serve --encoders N' runs it: the sessions'
English events get vectors in the background while they run, and
recalls and packets fuse them; the latencies then include sharing the
cores with the fill. Compare a run with and without it.
Exits 1 on any lost event or request error. --root is not used.
`
