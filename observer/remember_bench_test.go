package observer_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"dshmem/observer"
	"dshmem/observer/bench"
)

// BenchmarkRemember measures Engine.Remember, one memory a call into one
// workspace of a root with Markdown files (the write path of POST
// /v1/remember without HTTP), from 1 and from 16 concurrent callers.
// Beside ns/op (wall time per remember: with 16 callers, the inverse of
// the rate) it reports cpu-ns/op, the process's user+system CPU time per
// remember, which a shared machine disturbs less. `dshmem bench
// remember` measures the same over loopback HTTP against a server.
func BenchmarkRemember(b *testing.B) {
	for _, callers := range []int{1, 16} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			ctx := context.Background()
			eng, err := observer.Open(ctx, b.TempDir(), observer.Options{})
			require.NoError(b, err)
			defer eng.Close()
			synth := bench.NewSynth(13)
			texts := make([]string, 4096)
			for i := range texts {
				texts[i] = fmt.Sprintf("fact %d: %s", i, synth.Text(160))
			}
			remember := func(i int) error {
				imp := (i%4 + 4) % 4
				_, err := eng.Remember(ctx, observer.RememberRequest{Cwd: "/home/u/bench-remember",
					Content: fmt.Sprintf("%d %s", i, texts[(i%len(texts)+len(texts))%len(texts)]), Importance: &imp})
				return err
			}
			for i := 0; i < 300; i++ { // a workspace that already holds some
				require.NoError(b, remember(-1-i))
			}
			var next atomic.Int64
			cpu0 := cpuTime()
			b.ResetTimer()
			if callers == 1 {
				for i := 0; i < b.N; i++ {
					if err := remember(i); err != nil {
						b.Fatal(err)
					}
				}
			} else {
				b.SetParallelism((callers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := remember(int(next.Add(1))); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the user+system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
