package plugin_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"dshmem/observer/dsh/plugin/hosttest"

	"github.com/stretchr/testify/require"
)

// BenchmarkHostStep measures what the plugin adds to the real host: the
// time its system-prompt/assemble handler holds each model step (split
// into steps that use what the packet long poll brought, with no call,
// and a turn's first step, which fetches the packet for the new prompt),
// the session start with the server up and with the server to start, and
// the host's own turn time with and without the plugin, in one run.
//
//	go test ./observer/dsh/plugin/ -run '^$' -bench HostStep -benchtime 1x
func BenchmarkHostStep(b *testing.B) {
	h := hosttest.Find(b)
	const turns = 120
	prompts := []string{
		"the billing migration fails with a lock timeout", "how are invoices rendered?", "which database do we use?",
		"where is the on-call rotation?", "what is the release day?", "how do we deploy the billing api?",
	}
	var steps []hosttest.Step
	for i := range turns {
		steps = append(steps, hosttest.Step{Session: fmt.Sprintf("S%d", i/10), Say: prompts[i%len(prompts)]})
	}
	facts := []string{
		"When the billing migration fails with a lock timeout, rerun it with --lock-wait 60",
		"Invoices are rendered with wkhtmltopdf in the billing worker",
		"The database is PostgreSQL 16",
		"The on-call rotation lives in ops/oncall.yaml",
		"We release on Thursdays after the staging soak",
		"The billing api is deployed with helm charts",
	}
	var unchanged, changed, startUp, startCold, turnWith, turnWithout []float64
	for range b.N {
		// Without the plugin: the host's own turn time.
		bare := b.TempDir()
		proj := filepath.Join(b.TempDir(), "proj")
		os.MkdirAll(filepath.Join(proj, ".git"), 0o755)
		fake := h.StartFake(b)
		turnWithout = append(turnWithout, turnTimes(h.Play(b, bare, proj, fake, steps))...)

		// With the plugin; the server is not running at the first session.
		home := b.TempDir()
		root := filepath.Join(home, "memory")
		tr := filepath.Join(home, "trace.jsonl")
		bw := &world{t: nil, host: h, fake: fake, home: home, root: root, proj: proj}
		for _, f := range facts {
			out, err := bw.try("remember", "--cwd", proj, f)
			require.NoError(b, err, "remember: %v\n%s", err, out)
		}
		out, err := bw.try("dsh", "install", "--dsh-home", home, "--binary", dshmemBin)
		require.NoError(b, err, "install: %v\n%s", err, out)
		turnWith = append(turnWith, turnTimes(h.Play(b, home, proj, fake, steps, "DSHMEM_PLUGIN_TRACE="+tr))...)
		bw.stopServer()
		first := true
		if keep := os.Getenv("DSHMEM_BENCH_TRACE"); keep != "" {
			if raw, err := os.ReadFile(tr); err == nil {
				os.WriteFile(keep, raw, 0o600)
			}
		}
		for _, ev := range readTrace(b, tr) {
			if ev.Ev == "session-loaded" {
				if first {
					startCold = append(startCold, ev.Ms)
					first = false
				} else {
					startUp = append(startUp, ev.Ms)
				}
			}
			if ev.Ev == "step" {
				if ev.Called {
					changed = append(changed, ev.StepMs)
				} else {
					unchanged = append(unchanged, ev.StepMs)
				}
			}
		}
	}
	report := func(name, unit string, xs []float64) {
		if len(xs) == 0 {
			b.Logf("%s: no samples", name)
			return
		}
		slices.Sort(xs)
		p := func(q float64) float64 { return xs[min(len(xs)-1, int(q*float64(len(xs))))] }
		b.Logf("%-34s n=%3d  p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms", name, len(xs), p(0.5), p(0.99), xs[len(xs)-1])
		b.ReportMetric(p(0.99), unit+"-p99-ms")
	}
	report("step, no call (packet as pushed)", "step-unchanged", unchanged)
	report("step, packet fetched for a prompt", "step-fetched", changed)
	report("session start, server up", "start-up", startUp)
	report("session start, server started", "start-cold", startCold)
	report("host turn without the plugin", "turn-bare", turnWithout)
	report("host turn with the plugin", "turn-plugin", turnWith)
}

type pluginTrace struct {
	Ev     string  `json:"ev"`
	Ms     float64 `json:"ms"`
	StepMs float64 `json:"stepMs"`
	Called bool    `json:"called"` // the step asked the server (a turn's first step)
}

func readTrace(b *testing.B, path string) []pluginTrace {
	f, err := os.Open(path)
	require.NoError(b, err)
	defer f.Close()
	var out []pluginTrace
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev pluginTrace
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			out = append(out, ev)
		}
	}
	return out
}

// turnTimes are the durations of the driver's turns, in ms: from the
// previous traced step to the end of the turn.
func turnTimes(evs []hosttest.TraceEvent) []float64 {
	var out []float64
	for i := 1; i < len(evs); i++ {
		if evs[i].Ev == "turn" {
			out = append(out, float64(time.Duration(evs[i].T-evs[i-1].T)*time.Millisecond)/float64(time.Millisecond))
		}
	}
	return out
}
