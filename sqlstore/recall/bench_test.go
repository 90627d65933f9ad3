package recall_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/projector"
	"dshmem/sqlstore"
	"dshmem/sqlstore/recall"

	"github.com/stretchr/testify/require"
)

// benchStore folds n synthetic messages (a Zipf vocabulary of common
// words, Chinese words and rare made-up tokens) and n/50 entries.
func benchStore(b *testing.B, n int) *sqlstore.Store {
	b.Helper()
	s, err := sqlstore.Open(filepath.Join(b.TempDir(), "index.db"))
	require.NoError(b, err)
	b.Cleanup(func() { s.Close() })
	rng := rand.New(rand.NewPCG(3, 4))
	vocab := append(append([]string{}, fillerWords...), strings.Fields("记忆 注入 修复 会话 日志 索引 检索 迁移 配置 parseHTTPRequest go_build.sh")...)
	for i := range 5000 {
		vocab = append(vocab, fmt.Sprintf("w%04x", i))
	}
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(vocab)-1))
	text := func(words int) string {
		out := make([]string, words)
		for i := range out {
			out[i] = vocab[zipf.Uint64()]
		}
		return strings.Join(out, " ")
	}
	var evs []events.Envelope
	var seq uint64
	for i := range n {
		seq++
		d, _ := json.Marshal(map[string]any{"text": text(40)})
		evs = append(evs, events.Envelope{V: 1, Stream: "ws-a", Seq: seq, ID: fmt.Sprint("m", i), Type: events.TypeUserMessage, Time: "2026-08-18T10:00:00Z", Data: d})
		if i%50 == 0 {
			seq++
			d, _ := json.Marshal(map[string]any{"content": text(30)})
			evs = append(evs, events.Envelope{V: 1, Stream: "ws-a", Seq: seq, ID: fmt.Sprint("r", i), Type: events.TypeMemoryRemember, Time: "2026-08-18T10:00:00Z", Data: d})
		}
	}
	require.NoError(b, projector.New(s).Fold(context.Background(), evs))
	return s
}

// BenchmarkRecall measures recall and search over 20k messages and 400
// entries with queries of 1–6 words, half common and half rare. The
// full-size measurement is `dshmem bench recall`.
func BenchmarkRecall(b *testing.B) {
	s := benchStore(b, 20_000)
	rng := rand.New(rand.NewPCG(5, 6))
	queries := make([]string, 200)
	for i := range queries {
		var q []string
		for range 1 + rng.IntN(6) {
			if rng.IntN(2) == 0 {
				q = append(q, fillerWords[rng.IntN(len(fillerWords))])
			} else {
				q = append(q, fmt.Sprintf("w%04x", 100+rng.IntN(4900)))
			}
		}
		queries[i] = strings.Join(q, " ")
	}
	for _, kind := range []string{recall.KindSemantic, recall.KindEpisodic, recall.KindAll} {
		b.Run(kind, func(b *testing.B) {
			scored := 0
			for i := 0; i < b.N; i++ {
				res, err := recall.Find(context.Background(), s, recall.Query{Text: queries[i%len(queries)], Kind: kind, Now: time.Now()})
				require.NoError(b, err)
				scored += res.Candidates
			}
			b.ReportMetric(float64(scored)/float64(b.N), "scored/op")
		})
	}
}
