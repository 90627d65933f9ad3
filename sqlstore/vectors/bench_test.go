package vectors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/projector"
	"dshmem/sqlstore"
	"dshmem/sqlstore/encoder"
	"dshmem/sqlstore/madial"
	"dshmem/sqlstore/vectors"
)

// storeWithVectors is an index of n English episodes, each with a
// stand-in vector (a random unit vector), in 4 streams.
func storeWithVectors(b testing.TB, n int) *sqlstore.Store {
	b.Helper()
	s, err := sqlstore.Open(filepath.Join(b.TempDir(), "index.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	ctx := context.Background()
	const chunk = 10000
	for off := 0; off < n; off += chunk {
		evs := make([]events.Envelope, 0, chunk)
		for i := off; i < min(off+chunk, n); i++ {
			st := fmt.Sprintf("ws-%020d", i%4)
			evs = append(evs, events.Envelope{V: 1, Stream: st, Seq: uint64(i/4 + 1), ID: fmt.Sprintf("e%d", i),
				Type: events.TypeUserMessage, Time: "2026-08-18T10:00:00Z", Session: "s",
				Data: []byte(fmt.Sprintf(`{"text":"record %d about the build"}`, i))})
		}
		if err := projector.New(s).Fold(ctx, evs); err != nil {
			b.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	if _, err := vectors.Fill(ctx, s, nil, vectors.FillOptions{Batch: 4096, Encode: func(string) []float32 { return unit(r) }}); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkNearest times Nearest over an index of 100k and 1M stand-in
// episode vectors (the query's vector cached, so the query encoding is
// left out: BenchmarkQueryEncode times it): the sign scan of every
// vector of the scopes, then the int8 codes of the best Rerank read
// from the index and ranked. "all" scans every stream, "one" one of four.
func BenchmarkNearest(b *testing.B) {
	m := testModel(b)
	for _, n := range []int{100_000, 1_000_000} {
		if testing.Short() && n > 100_000 {
			continue
		}
		s := storeWithVectors(b, n)
		d := vectors.NewDense(m)
		ctx := context.Background()
		// The first call loads the cache (in the background when large).
		for {
			if _, err := d.Nearest(ctx, s, sqlstore.VectorEpisode, nil, "the build fails", 20); err != nil {
				b.Fatal(err)
			}
			if d.Loaded(s, sqlstore.VectorEpisode) >= n {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		for _, sc := range []struct {
			name   string
			scopes []string
		}{{"all", nil}, {"one", []string{fmt.Sprintf("ws-%020d", 1)}}} {
			b.Run(fmt.Sprintf("%dk-%s", n/1000, sc.name), func(b *testing.B) {
				lats := make([]time.Duration, 0, b.N)
				var cpu0 = cpuTime()
				for b.Loop() {
					t0 := time.Now()
					hs, err := d.Nearest(ctx, s, sqlstore.VectorEpisode, sc.scopes, "the build fails", 20)
					lats = append(lats, time.Since(t0))
					if err != nil || len(hs) != 20 {
						b.Fatalf("got %d hits, %v", len(hs), err)
					}
				}
				slices.Sort(lats)
				b.ReportMetric(float64(lats[len(lats)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lats[len(lats)*99/100].Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(len(lats)), "cpu-ms/op")
			})
		}
	}
}

// BenchmarkFill times the background fill: texts/s encoded and stored
// by one encoder and by one per core.
func BenchmarkFill(b *testing.B) {
	m := testModel(b)
	texts := []string{
		"the nightly job runs out of memory when it parses the logs",
		"We deploy the service with blue-green releases behind the load balancer",
		"I rewrote parseConfig so that an empty file is an error, not a default config",
		"Tests pass on my machine but CI fails on the migration step with a timeout",
	}
	var all []string
	for i := range 256 {
		all = append(all, fmt.Sprintf("%s (%d)", texts[i%len(texts)], i))
	}
	fillBench(b, m, all)
}

// fillBench times vectors.Fill over an index of one user message a text,
// with one encoder and with one per core: texts/s, and pieces a text.
func fillBench(b *testing.B, m *vectors.Model, texts []string) {
	e := m.Encoder().NewEncoder()
	pieces := 0
	for _, t := range texts {
		pieces += len(e.Pieces(t))
	}
	for _, workers := range []int{1, runtime.NumCPU()} {
		b.Run(fmt.Sprintf("workers-%d", workers), func(b *testing.B) {
			total, elapsed := 0, time.Duration(0)
			for b.Loop() {
				b.StopTimer()
				s, err := sqlstore.Open(filepath.Join(b.TempDir(), "index.db"))
				if err != nil {
					b.Fatal(err)
				}
				evs := make([]events.Envelope, len(texts))
				for i, t := range texts {
					data, _ := json.Marshal(map[string]string{"text": t})
					evs[i] = events.Envelope{V: 1, Stream: "global", Seq: uint64(i + 1), ID: fmt.Sprint(i), Type: events.TypeUserMessage,
						Time: "2026-08-18T10:00:00Z", Data: data}
				}
				if err := projector.New(s).Fold(context.Background(), evs); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				t0 := time.Now()
				rep, err := vectors.Fill(context.Background(), s, m, vectors.FillOptions{Workers: workers})
				elapsed += time.Since(t0)
				if err != nil || rep.Encoded != len(texts) {
					b.Fatalf("encoded %d of %d, %v", rep.Encoded, len(texts), err)
				}
				total += len(texts)
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(total)/elapsed.Seconds(), "texts/s")
			b.ReportMetric(float64(pieces)/float64(len(texts)), "pieces/text")
		})
	}
}

// BenchmarkFillMADial times the background fill over real English text:
// every MADial-Bench en memory and every dialogue line (the kind of text
// a user's memories and messages are, at their real lengths), read from
// ../shared/data/madial beside the repository (skipped without it). It
// reports texts/s with one encoder (what `dshmem serve` runs by default)
// and one per core, and the mean pieces a text.
func BenchmarkFillMADial(b *testing.B) {
	m := testModel(b)
	dir := filepath.Join("..", "..", "..", "shared", "data", "madial")
	mems, cases, err := madial.Load(dir, "en")
	if err != nil {
		b.Skipf("MADial-Bench en not found beside the repository: %v", err)
	}
	var texts []string
	for _, mm := range mems {
		texts = append(texts, mm.Text)
	}
	for _, c := range cases {
		for _, t := range c.Turns {
			if t = strings.TrimSpace(strings.TrimPrefix(t, "<BOD>")); t != "" && encoder.English(t) {
				texts = append(texts, t)
			}
		}
	}
	fillBench(b, m, texts[:min(len(texts), 512)])
}

// BenchmarkWarm times what a one-shot command pays to read the vectors
// its query can use (Warm), over an index of 100k stand-in episode
// vectors in 4 streams: "all" reads every one, "one" the 25k of one
// stream; "count" is the indexed count that decides whether to read.
// cpu-ms/100k is the CPU per 100k rows read (or counted).
func BenchmarkWarm(b *testing.B) {
	const n = 100_000
	s := storeWithVectors(b, n)
	ctx := context.Background()
	kinds := []string{sqlstore.VectorEntry, sqlstore.VectorEpisode}
	for _, sc := range []struct {
		name    string
		streams []string
		rows    int
	}{{"all", nil, n}, {"one", []string{fmt.Sprintf("ws-%020d", 1)}, n / 4}} {
		b.Run(sc.name, func(b *testing.B) {
			cpu0, ops := cpuTime(), 0
			for b.Loop() {
				d := vectors.NewDense(nil)
				if err := d.Warm(ctx, s, kinds, sc.streams); err != nil {
					b.Fatal(err)
				}
				if got := d.Loaded(s, sqlstore.VectorEpisode); got != sc.rows {
					b.Fatalf("loaded %d of %d", got, sc.rows)
				}
				ops++
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(ops)*100_000/float64(sc.rows), "cpu-ms/100k")
		})
	}
	b.Run("count", func(b *testing.B) {
		cpu0, ops := cpuTime(), 0
		for b.Loop() {
			c, err := s.CountVectors(ctx, sqlstore.VectorEpisode, nil)
			if err != nil || c != n {
				b.Fatalf("counted %d, %v", c, err)
			}
			ops++
		}
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(ops), "cpu-ms/100k")
	})
}
