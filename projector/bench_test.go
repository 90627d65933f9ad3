package projector

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkFold folds 10k-event batches of ~300-byte mixed-language
// messages into a fresh index and reports events/s of wall time, events
// per CPU second of the process during the folds (a steadier figure on a
// shared machine; the fold uses two goroutines, so it can be below
// events/s), and index bytes per event (main file + WAL).
//
// vocab=zipf draws words from 8,000 Chinese words and 2,000 identifiers
// with a Zipf law (about 77 distinct terms per message, most of FTS5's
// cost); vocab=small from 60 words, which flatters FTS5.
func BenchmarkFold(b *testing.B) {
	b.Run("vocab=zipf", func(b *testing.B) { benchFold(b, sentence) })
	b.Run("vocab=small", func(b *testing.B) { benchFold(b, smallSentence) })
}

func benchFold(b *testing.B, gen func(*rand.Rand, int) string) {
	const perFold = 10000
	s := openStore(b)
	p := New(s)
	ctx := context.Background()
	total := 0
	var cpu time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		evs := corpusOf(fmt.Sprintf("ws-bench%03d", i), perFold, 300, uint64(i), gen)
		c0 := cpuTime()
		b.StartTimer()
		require.NoError(b, p.Fold(ctx, evs))
		b.StopTimer()
		cpu += cpuTime() - c0
		b.StartTimer()
		total += len(evs)
	}
	b.StopTimer()
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(total)/cpu.Seconds(), "events/cpu-s")
	st, err := s.Stats(ctx)
	require.NoError(b, err)
	b.ReportMetric(float64(st.DBBytes+st.WALBytes)/float64(total), "bytes/event")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
