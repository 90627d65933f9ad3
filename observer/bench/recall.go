package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/sqlstore"
	"dshmem/sqlstore/recall"
	"dshmem/sqlstore/vectors"
)

// RecallBenchOptions configure BenchRecall. The zero value works.
type RecallBenchOptions struct {
	Records  int    // episodic records in the synthetic root; 0 → 100,000
	Queries  int    // queries timed per mode; 0 → 1,000
	CacheDir string // where built roots are kept; "" → os.UserCacheDir()/dshmem
	Progress func(phase string, done, total int)
	// Dense, when set, times the modes again with the sentence encoder:
	// each query encoded by the model and fused with the nearest vectors
	// of its scopes. The root's vectors are stand-ins (a unit vector drawn
	// from each English text's hash, filled once and kept with the cached
	// root): encoding a million records takes hours here, and what a scan
	// costs does not depend on what the vectors hold.
	Dense *vectors.Dense
}

// RecallBenchRun is one timed mode.
type RecallBenchRun struct {
	Mode       string        `json:"mode"`
	Queries    int           `json:"queries"`
	P50        time.Duration `json:"p50Ns"`
	P95        time.Duration `json:"p95Ns"`
	P99        time.Duration `json:"p99Ns"`
	Max        time.Duration `json:"maxNs"`
	Candidates float64       `json:"candidatesMean"` // documents scored per query
	CandMax    int           `json:"candidatesMax"`
	Partial    int           `json:"partial"` // queries whose deadline expired
	Empty      int           `json:"empty"`   // queries that found nothing
}

// RecallBenchResult is what BenchRecall measured.
type RecallBenchResult struct {
	Records        int              `json:"records"`
	Entries        int              `json:"entries"`
	Root           string           `json:"root"`
	Built          bool             `json:"built"` // false when a cached root was reused
	BuildTime      time.Duration    `json:"buildNs"`
	IndexBytes     int64            `json:"indexBytes"`
	BytesPerRecord float64          `json:"indexBytesPerRecord"`
	Runs           []RecallBenchRun `json:"runs"`
	Vectors        int64            `json:"vectors,omitempty"` // vectors in the root (Dense)
}

// recallBenchFormat names the layout of a cached bench root; bump it when
// the synthetic data or the index format changes, so stale roots are
// rebuilt rather than measured.
const recallBenchFormat = "v2"

// benchEntryEvery: one memory/remember per this many records, so recall
// has entries to rank (2% of the records).
const benchEntryEvery = 50

// BenchRecall builds (once, cached) a synthetic root of o.Records
// episodic records of mixed Chinese/English agent chatter with a Zipf
// vocabulary and fixed seed, plus one entry per 50 records, then times
// o.Queries queries of 1–6 terms mixing rare and very common words in
// three modes: recall (entries of one workspace and global), search
// (episodic, every stream) and search --kind all.
func BenchRecall(ctx context.Context, o RecallBenchOptions) (RecallBenchResult, error) {
	if o.Records <= 0 {
		o.Records = 100_000
	}
	if o.Queries <= 0 {
		o.Queries = 1000
	}
	if o.CacheDir == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			return RecallBenchResult{}, fmt.Errorf("find cache dir: %w", err)
		}
		o.CacheDir = filepath.Join(d, "dshmem")
	}
	res := RecallBenchResult{Records: o.Records, Entries: o.Records / benchEntryEvery,
		Root: filepath.Join(o.CacheDir, fmt.Sprintf("bench-recall-%s-%d", recallBenchFormat, o.Records))}
	if o.Dense != nil {
		// A root of its own: its index has the vectors table, which a
		// build without it would refuse to read.
		res.Root += "-vectors"
	}
	done := filepath.Join(res.Root, "complete")
	if _, err := os.Stat(done); err != nil {
		t0 := time.Now()
		if err := buildRecallRoot(ctx, res.Root, o); err != nil {
			return res, err
		}
		if err := os.WriteFile(done, []byte(recallBenchFormat+"\n"), 0o600); err != nil {
			return res, fmt.Errorf("mark bench root built: %w", err)
		}
		res.Built, res.BuildTime = true, time.Since(t0)
	}
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(filepath.Join(res.Root, sqlstore.IndexFile+suffix)); err == nil {
			res.IndexBytes += fi.Size()
		}
	}
	res.BytesPerRecord = float64(res.IndexBytes) / float64(o.Records)

	if o.Dense != nil {
		n, err := standInVectors(ctx, res.Root, o.Progress)
		if err != nil {
			return res, err
		}
		res.Vectors = n
	}
	eng, err := observer.Open(ctx, res.Root, observer.Options{ReadOnly: true})
	if err != nil {
		return res, err
	}
	defer eng.Close()
	queries := benchQueries(o.Queries)
	ws := observer.StreamForCwd("/bench/ws0")
	modes := []struct {
		name string
		q    recall.Query
	}{
		{"recall", recall.Query{Kind: recall.KindSemantic, Scopes: []string{ws, observer.GlobalStream}}},
		{"search", recall.Query{Kind: recall.KindEpisodic, Limit: 10, Bytes: -1, NoFloor: true}},
		{"search-all", recall.Query{Kind: recall.KindAll, Limit: 10, Bytes: -1, NoFloor: true}},
	}
	if o.Dense != nil {
		for _, m := range modes[:3] {
			m.name += "+vectors"
			m.q.Dense = o.Dense
			modes = append(modes, m)
		}
	}
	now := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	for _, m := range modes {
		run := RecallBenchRun{Mode: m.name, Queries: len(queries)}
		lats := make([]time.Duration, 0, len(queries))
		cands := 0
		for i, text := range queries {
			q := m.q
			q.Text, q.Now = text, now
			t0 := time.Now()
			r, err := eng.Recall(ctx, q)
			lats = append(lats, time.Since(t0))

			if err != nil {
				return res, fmt.Errorf("bench %s query %q: %w", m.name, text, err)
			}
			cands += r.Candidates
			run.CandMax = max(run.CandMax, r.Candidates)
			if r.Partial {
				run.Partial++
			}
			if len(r.Items) == 0 {
				run.Empty++
			}
			if o.Progress != nil && (i+1)%100 == 0 {
				o.Progress(m.name, i+1, len(queries))
			}
		}
		slices.Sort(lats)
		run.P50, run.P95, run.P99, run.Max = percentile(lats, 0.50), percentile(lats, 0.95), percentile(lats, 0.99), lats[len(lats)-1]
		run.Candidates = float64(cands) / float64(len(queries))
		res.Runs = append(res.Runs, run)
	}
	return res, nil
}

// buildRecallRoot ingests the synthetic records through the ordinary
// intake (validate, redact, append, fold) in calls of 1,000 lines.
func buildRecallRoot(ctx context.Context, root string, o RecallBenchOptions) error {
	if err := os.RemoveAll(root); err != nil {
		return fmt.Errorf("clear bench root: %w", err)
	}
	eng, err := observer.Open(ctx, root, observer.Options{})
	if err != nil {
		return err
	}
	syn := NewSynth(7)
	const batch = 1000
	lines := make([][]byte, 0, batch+batch/benchEntryEvery+1)
	flush := func(done int) error {
		if len(lines) == 0 {
			return nil
		}
		res, out, err := eng.Ingest(ctx, lines)
		if err != nil {
			return fmt.Errorf("build bench root: %w", err)
		}
		if res.Rejected > 0 {
			for _, oc := range out {
				if oc.Error != nil {
					return fmt.Errorf("build bench root: %v", oc.Error)
				}
			}
		}
		lines = lines[:0]
		if o.Progress != nil {
			o.Progress("build", done, o.Records)
		}
		return nil
	}
	for i := 0; i < o.Records; i++ {
		lines = append(lines, syn.Line(i, 300, 4))
		if i%benchEntryEvery == benchEntryEvery-1 {
			lines = append(lines, syn.rememberLine(i, 4))
		}
		if len(lines) >= batch {
			if err := flush(i + 1); err != nil {
				eng.Close()
				return err
			}
		}
	}
	if err := flush(o.Records); err != nil {
		eng.Close()
		return err
	}
	return eng.Close()
}

// rememberLine is a memory/remember envelope for the i-th record's
// workspace, with a synthetic title, content and tags.
func (s *Synth) rememberLine(i, workspaces int) []byte {
	ws := (i / benchEntryEvery) % max(workspaces, 1)
	t := s.start.Add(time.Duration(i) * time.Millisecond).Format("2006-01-02T15:04:05.000Z07:00")
	// The words are drawn in this order (title, content, tags), as the
	// workload has always drawn them, so a seed gives the same entries.
	title, content := s.Text(30), s.Text(240)
	tags := []string{s.vocab[s.zipf.Uint64()], s.vocab[s.zipf.Uint64()]}
	// Strings, a string slice: encoding cannot fail.
	data, _ := payload.Marshal(payload.Remember{Content: content, Title: title, Tags: tags})
	b, _ := events.Marshal(&events.Envelope{ID: fmt.Sprintf("bench:r%d", i), Type: events.TypeMemoryRemember, Time: t,
		Session: fmt.Sprintf("bench-%d", ws), Cwd: fmt.Sprintf("/bench/ws%d", ws), Data: data})
	return b
}

// benchQueries returns n queries of 1–6 terms of the synthetic
// vocabulary: each term is, with even odds, one of the 30 most common
// words or a rare one (rank ≥ 200), fixed seed.
func benchQueries(n int) []string {
	syn := NewSynth(11)
	rng := rand.New(rand.NewPCG(11, 13))
	out := make([]string, n)
	for i := range out {
		k := 1 + rng.IntN(6)
		q := ""
		for j := 0; j < k; j++ {
			var w string
			if rng.IntN(2) == 0 {
				w = syn.vocab[rng.IntN(30)]
			} else {
				w = syn.vocab[200+rng.IntN(len(syn.vocab)-200)]
			}
			if j > 0 {
				q += " "
			}
			q += w
		}
		out[i] = q
	}
	return out
}

// standInVectors fills the vectors of the bench root's English texts
// with stand-ins (see RecallBenchOptions.Dense), once, and returns how
// many the root holds.
func standInVectors(ctx context.Context, root string, progress func(string, int, int)) (int64, error) {
	st, err := sqlstore.Open(filepath.Join(root, sqlstore.IndexFile))
	if err != nil {
		return 0, err
	}
	defer st.Close()
	if progress != nil {
		progress("vectors", 0, 0)
	}
	if _, err := vectors.Fill(ctx, st, nil, vectors.FillOptions{Batch: 4096, Encode: standIn}); err != nil {
		return 0, fmt.Errorf("fill stand-in vectors: %w", err)
	}
	e, ep, _, err := st.VectorCounts(ctx)
	return e + ep, err
}

// standIn is a unit vector drawn from the hash of text.
func standIn(text string) []float32 {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(text); i++ {
		h = (h ^ uint64(text[i])) * 1099511628211
	}
	r := rand.New(rand.NewPCG(h, 7))
	v := make([]float32, 512)
	var ss float64
	for i := range v {
		x := r.NormFloat64()
		v[i] = float32(x)
		ss += x * x
	}
	inv := float32(1 / math.Sqrt(ss))
	for i := range v {
		v[i] *= inv
	}
	return v
}
