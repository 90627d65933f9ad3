package events

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var benchWords = strings.Fields(`the memory engine log segment batch frame writer reader replay
index summary workspace session checkpoint distiller projector recall search entry scope
fix bug test build deploy config error retry timeout cache token file path function module
package import export struct interface method value pointer slice map channel goroutine
记忆 注入 修复 问题 会话 工作区 摘要 检索 日志 配置 错误 测试 构建 部署`)

// benchEvent is a realistic ~300-byte event: ids, times and text vary.
func benchEvent(rng *rand.Rand, i int) Envelope {
	var sb strings.Builder
	for sb.Len() < 150 {
		sb.WriteString(benchWords[rng.Intn(len(benchWords))])
		sb.WriteByte(' ')
	}
	data, _ := json.Marshal(map[string]string{"text": sb.String()})
	return Envelope{
		ID:      fmt.Sprintf("dsh:session-%08x:%d", rng.Uint32(), i),
		Type:    Types[rng.Intn(4)+2],
		Time:    fmt.Sprintf("2026-08-18T10:%02d:%02d.%03dZ", i/60000%60, i/1000%60, i%1000),
		Session: "session-20260818-7f3a",
		Cwd:     "/home/u/projects/dshmem",
		Data:    data,
	}
}

// BenchmarkAppend measures fsync'd group commit: many goroutines append
// to one stream and each call returns after the fsync of its frame.
func BenchmarkAppend(b *testing.B) {
	for _, c := range []struct {
		name    string
		perCall int
		par     int // goroutines per GOMAXPROCS
	}{
		{"1ev-x128", 1, 64},
		{"1ev-x512", 1, 256},
		{"16ev-x64", 16, 32},
		{"64ev-x8", 64, 4},
	} {
		b.Run(c.name, func(b *testing.B) {
			rng := rand.New(rand.NewSource(1))
			pool := make([]Envelope, 4096)
			raw := 0
			for i := range pool {
				pool[i] = benchEvent(rng, i)
				line, _ := Marshal(&Envelope{V: 1, Stream: "global", Seq: uint64(i + 1), ID: pool[i].ID, Type: pool[i].Type,
					Time: pool[i].Time, Session: pool[i].Session, Cwd: pool[i].Cwd, Data: pool[i].Data})
				raw += len(line) + 1
			}
			dir := b.TempDir()
			l, err := OpenLog(dir, Options{})
			require.NoError(b, err)
			var next atomic.Int64
			b.SetParallelism(c.par)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				evs := make([]Envelope, c.perCall)
				for pb.Next() {
					n := int(next.Add(int64(c.perCall)))
					for i := range evs {
						evs[i] = pool[(n+i)%len(pool)]
					}
					_, err := l.Append(context.Background(), "global", evs)
					assert.NoError(b, err)
				}
			})
			b.StopTimer()
			events := float64(next.Load())
			st, _ := l.Stats()
			l.Close()
			b.ReportMetric(events/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(st.Bytes)/events, "bytes/event")
			b.ReportMetric(float64(raw)/float64(len(pool)), "json-bytes/event")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkOpenLogReadOnly measures the open of a read command on a log
// of 1M events in one stream (a sealed 64 MiB segment and the active
// one): with Trusted (the index's cursors) the active segment is taken
// by its batch headers; without, every frame past the seal is read and
// hashed. Batches of 1,024 events are what ingest writes, batches of 16
// what a server's group commits of a few events look like.
func BenchmarkOpenLogReadOnly(b *testing.B) {
	const total = 1 << 20
	for _, perBatch := range []int{1024, 16} {
		dir := b.TempDir()
		l, err := OpenLog(dir, Options{FS: noSyncFS{}})
		require.NoError(b, err)
		rng := rand.New(rand.NewSource(1))
		pool := make([]Envelope, 4096)
		for i := range pool {
			pool[i] = benchEvent(rng, i)
		}
		evs := make([]Envelope, perBatch)
		for n := 0; n < total; n += perBatch {
			for i := range evs {
				evs[i] = pool[(n+i)%len(pool)]
			}
			_, err := l.Append(context.Background(), "global", evs)
			require.NoError(b, err)
		}
		st, _ := l.Stats()
		l.Close()
		for _, trusted := range []bool{true, false} {
			name := fmt.Sprintf("%dev-batches/trusted=%v", perBatch, trusted)
			b.Run(name, func(b *testing.B) {
				var opts Options
				if trusted {
					opts.Trusted = map[string]uint64{"global": total}
				}
				for b.Loop() {
					r, err := OpenLogReadOnly(dir, opts)
					require.NoError(b, err)
					require.Equal(b, total, r.LastSeq("global"), "LastSeq %d, want %d", r.LastSeq("global"), total)
					r.Close()
				}
				b.ReportMetric(float64(st.Segments), "segments")
				b.ReportMetric(float64(st.Bytes)/(1<<20), "MiB")
			})
		}
	}
}

// BenchmarkRewrite measures a scrub's rewrite of a stream of 50,000
// events in 4 MiB segments, one changed event in each segment: each
// iteration reads every segment (the first pass) and rewrites all of
// them (checked and renamed). Bytes are the segments' bytes.
func BenchmarkRewrite(b *testing.B) {
	dir := b.TempDir()
	l, err := OpenLog(dir, Options{SegmentSize: 4 << 20})
	require.NoError(b, err)
	defer l.Close()
	rng := rand.New(rand.NewSource(1))
	const n = 50000
	for i := 0; i < n; i += 1000 {
		evs := make([]Envelope, 1000)
		for j := range evs {
			evs[j] = benchEvent(rng, i+j)
		}
		evs[0].Data, _ = json.Marshal(map[string]string{"text": "[A] marked"})
		_, err := l.Append(context.Background(), "global", evs)
		require.NoError(b, err)
	}
	require.NoError(b, l.Seal(context.Background(), "global"))
	st, _ := l.Stats()
	b.SetBytes(st.Bytes)
	flip := func(from, to string) LineRewriter {
		return func(seq uint64, line []byte) ([]byte, bool, error) {
			if !strings.Contains(string(line), from) {
				return line, false, nil
			}
			return []byte(strings.Replace(string(line), from, to, 1)), true, nil
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		from, to := "[A]", "[B]"
		if i%2 == 1 {
			from, to = to, from
		}
		rep, err := l.Rewrite(context.Background(), "global", flip(from, to), RewriteOptions{})
		require.NoError(b, err)
		assert.Equal(b, n/1000, rep.Events)
	}
}

// BenchmarkOpenLogManyStreams measures OpenLog of 1,000 streams of one
// batch each: what every open pays per stream (a listing, a walk of the
// active segment, the look for a quarantine marker).
func BenchmarkOpenLogManyStreams(b *testing.B) {
	dir := b.TempDir()
	l, err := OpenLog(dir, Options{FS: noSyncFS{}})
	require.NoError(b, err)
	for i := range 1000 {
		_, err := l.Append(context.Background(), fmt.Sprintf("ws-%04d", i), testEvents(i, 2))
		require.NoError(b, err)
	}
	require.NoError(b, l.Close())
	trusted := map[string]uint64{}
	for i := range 1000 {
		trusted[fmt.Sprintf("ws-%04d", i)] = 2
	}
	for b.Loop() {
		r, err := OpenLogReadOnly(dir, Options{Trusted: trusted})
		require.NoError(b, err)
		r.Close()
	}
}
