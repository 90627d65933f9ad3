package vectors

import (
	"context"
	bits64 "math/bits"
	"slices"
	"sort"
	"sync"

	"dshmem/sqlstore"
	"dshmem/sqlstore/encoder"
)

// Rerank is how many vectors nearest by their sign bits are ranked again
// by their int8 cosine, at the least (a query asking for k ranks
// max(Rerank, 8k)). On MADial en's vectors the true top 20 by float32
// cosine were all within it (TestSignScanFindsTheNearest).
const Rerank = 256

// Hit is a vector near the query: the corpus rowid of its text and the
// cosine.
type Hit struct {
	N      int64
	Cosine float64
}

// Dense answers nearest-vector queries over indexes, with one Model.
// It is safe for concurrent use.
type Dense struct {
	m *Model

	mu     sync.Mutex
	caches map[string]*cache // by index path
	qmu    sync.Mutex
	qvecs  map[string]*queryVec // the vectors of recent queries
}

// NewDense returns a Dense over m.
func NewDense(m *Model) *Dense {
	return &Dense{m: m, caches: map[string]*cache{}, qvecs: map[string]*queryVec{}}
}

// Model returns d's model.
func (d *Dense) Model() *Model { return d.m }

type queryVec struct {
	once sync.Once
	v    []float32
}

// maxQueryVecs bounds the remembered query vectors (a recall of both
// kinds encodes its query once; the map is emptied when full).
const maxQueryVecs = 64

// queryVector encodes text once per recent text. A query is encoded by
// its last encoder.MaxPieces pieces: a dialogue's newest lines lead.
func (d *Dense) queryVector(text string) []float32 {
	d.qmu.Lock()
	q := d.qvecs[text]
	if q == nil {
		if len(d.qvecs) >= maxQueryVecs {
			clear(d.qvecs)
		}
		q = &queryVec{}
		d.qvecs[text] = q
	}
	d.qmu.Unlock()
	q.once.Do(func() {
		e := d.m.get()
		q.v = e.EncodeTail(nil, text)
		d.m.put(e)
	})
	return q.v
}

// Nearest returns at most k texts of kind (sqlstore.VectorEntry or
// VectorEpisode) in scopes (nil: every stream) nearest text, best first.
// A text that is not English gets none (nil), and so does an index with
// no vectors of kind; the query is not encoded then.
func (d *Dense) Nearest(ctx context.Context, s *sqlstore.Store, kind string, scopes []string, text string, k int) ([]Hit, error) {
	if k <= 0 || !encoder.English(text) {
		return nil, nil
	}
	c := d.cache(s)
	ki, names, err := c.refresh(ctx, s, kind, scopes)
	if err != nil || len(ki.ns) == 0 {
		return nil, err
	}
	q := d.queryVector(text)
	var allowed []bool
	if scopes != nil {
		allowed = make([]bool, len(names))
		for i, n := range names {
			allowed[i] = slices.Contains(scopes, n)
		}
	}
	var qb [words]uint64
	signBits(qb[:0], q)
	cand := ki.scan(qb[:], allowed, max(Rerank, 8*k))
	if len(cand) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(cand))
	for i, j := range cand {
		ids[i] = ki.ids[j]
	}
	codes, err := s.VectorCodes(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Hit, 0, len(cand))
	for _, j := range cand {
		v, ok := codes[ki.ids[j]]
		if !ok || len(v.Code) != encoder.Dim {
			continue // deleted since the cache was loaded
		}
		out = append(out, Hit{N: ki.ns[j], Cosine: float64(cosine(q, v.Scale, v.Code))})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Cosine != out[j].Cosine {
			return out[i].Cosine > out[j].Cosine
		}
		return out[i].N > out[j].N
	})
	return out[:min(k, len(out))], nil
}

func (d *Dense) cache(s *sqlstore.Store) *cache {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.caches[s.Path()]
	if c == nil {
		c = &cache{scopeIdx: map[string]uint16{}}
		d.caches[s.Path()] = c
	}
	return c
}

// cache is what a process holds of one index's vectors.
type cache struct {
	mu       sync.Mutex
	epoch    string
	kinds    [2]*kindIndex // entry, episode
	loading  [2]bool       // a background load of the kind runs
	scopeIdx map[string]uint16
	names    []string
}

// kindIndex holds the sign bits of one kind's vectors, append-only: a
// top-up builds a new one, so a scan may go on over the old.
type kindIndex struct {
	gen     int64
	streams []string // the streams loaded (Warm of a subset), sorted; nil: every stream
	last    int64    // the greatest vectors.id loaded
	ids     []int64  // vectors.id
	ns      []int64  // corpus rowid
	scope   []uint16 // into cache.names
	bits    []uint64 // words a vector
}

// inlineLoad is the most rows a query loads itself; a larger load (the
// first of a big index: about 0.6 s per 100k rows on this machine)
// runs in the background while queries go on with what is loaded (words
// alone until then), so no query waits for it or loses its deadline.
const inlineLoad = 4096

// refresh brings the cache of kind up to date with the index (one small
// query when nothing changed) and returns it with the scope names. A
// cache of some streams only (Warm) that does not hold every one of
// scopes (nil: every stream) is dropped and loaded again whole.
func (c *cache) refresh(ctx context.Context, s *sqlstore.Store, kind string, scopes []string) (*kindIndex, []string, error) {
	st, err := s.VectorState(ctx)
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.Epoch != c.epoch {
		c.epoch, c.kinds = st.Epoch, [2]*kindIndex{}
	}
	i, gen := 0, st.EntryGen
	if kind == sqlstore.VectorEpisode {
		i, gen = 1, st.EpisodeGen
	}
	ki := c.kinds[i]
	if ki == nil || ki.gen != gen || !ki.holds(scopes) {
		ki = &kindIndex{gen: gen}
		c.kinds[i] = ki
	}
	if ki.last >= st.Max {
		return ki, slices.Clip(c.names), nil
	}
	if st.Max-ki.last <= inlineLoad {
		rows, err := readVectors(ctx, s, kind, ki.last, ki.streams, 0)
		if err != nil {
			return nil, nil, err
		}
		ki = c.install(i, ki, rows, st.Max)
		return ki, slices.Clip(c.names), nil
	}
	if !c.loading[i] {
		c.loading[i] = true
		go func(from *kindIndex, epoch string) {
			rows, err := readVectors(context.Background(), s, kind, from.last, from.streams, 0)
			c.mu.Lock()
			defer c.mu.Unlock()
			c.loading[i] = false
			if err == nil && c.epoch == epoch && c.kinds[i] == from {
				c.install(i, from, rows, st.Max)
			}
		}(ki, st.Epoch)
	}
	return ki, slices.Clip(c.names), nil
}

// loaded is one row read for the cache.
type loaded struct {
	id, n  int64
	stream string
	bits   [words]uint64
}

// holds reports whether ki has every vector of scopes (nil: every
// stream) it had when loaded.
func (ki *kindIndex) holds(scopes []string) bool {
	if ki.streams == nil {
		return true
	}
	if scopes == nil {
		return false
	}
	for _, sc := range scopes {
		if _, ok := slices.BinarySearch(ki.streams, sc); !ok {
			return false
		}
	}
	return true
}

// readVectors reads the vectors of kind above the row id after, of
// streams (nil: every stream); about hint of them (0: not known).
func readVectors(ctx context.Context, s *sqlstore.Store, kind string, after int64, streams []string, hint int64) ([]loaded, error) {
	rows := make([]loaded, 0, hint)
	err := s.LoadVectors(ctx, kind, encoder.ModelVersion, after, streams, func(v sqlstore.StoredVector) {
		if len(v.Code) != encoder.Dim {
			return
		}
		r := loaded{id: v.ID, n: v.N, stream: v.Stream}
		codeBits(r.bits[:0], v.Code)
		rows = append(rows, r)
	})
	return rows, err
}

// install appends rows to a copy of ki (a scan running on ki keeps it)
// and makes the copy the cache of kind i, whose rows now reach upTo. It
// runs under c.mu.
func (c *cache) install(i int, ki *kindIndex, rows []loaded, upTo int64) *kindIndex {
	nk := &kindIndex{gen: ki.gen, streams: ki.streams, last: upTo, ids: slices.Clip(ki.ids), ns: slices.Clip(ki.ns),
		scope: slices.Clip(ki.scope), bits: slices.Clip(ki.bits)}
	for _, r := range rows {
		nk.last = max(nk.last, r.id) // read past max: committed since the state was read
		si, ok := c.scopeIdx[r.stream]
		if !ok {
			si = uint16(len(c.names))
			c.scopeIdx[r.stream] = si
			c.names = append(c.names, r.stream)
		}
		nk.ids = append(nk.ids, r.id)
		nk.ns = append(nk.ns, r.n)
		nk.scope = append(nk.scope, si)
		nk.bits = append(nk.bits, r.bits[:]...)
	}
	c.kinds[i] = nk
	return nk
}

// distPool keeps the distance buffers of scans (2 bytes a vector).
var distPool = sync.Pool{New: func() any { return new([]uint16) }}

// scan returns the positions of the r vectors (of the allowed scopes;
// nil: all) nearest q by Hamming distance of their signs, in no order.
// Distances go into a histogram of the 513 possible values, which gives
// the cut without sorting.
func (ki *kindIndex) scan(q []uint64, allowed []bool, r int) []int {
	n := len(ki.ns)
	buf := distPool.Get().(*[]uint16)
	defer distPool.Put(buf)
	if cap(*buf) < n {
		*buf = make([]uint16, n)
	}
	dist := (*buf)[:n]
	var hist [encoder.Dim + 2]int
	bits := ki.bits[:n*words]
	q0, q1, q2, q3, q4, q5, q6, q7 := q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]
	// hamming, inlined: eight XOR and POPCNT, one bounds check a vector.
	for j := range dist {
		if allowed != nil {
			if sc := ki.scope[j]; int(sc) >= len(allowed) || !allowed[sc] {
				dist[j] = encoder.Dim + 1
				continue
			}
		}
		b := bits[j*words : j*words+words : j*words+words]
		h := bits64.OnesCount64(b[0]^q0) + bits64.OnesCount64(b[1]^q1) + bits64.OnesCount64(b[2]^q2) + bits64.OnesCount64(b[3]^q3) +
			bits64.OnesCount64(b[4]^q4) + bits64.OnesCount64(b[5]^q5) + bits64.OnesCount64(b[6]^q6) + bits64.OnesCount64(b[7]^q7)
		dist[j] = uint16(h)
		hist[h]++
	}
	cut, total := 0, 0
	for ; cut <= encoder.Dim; cut++ {
		total += hist[cut]
		if total >= r {
			break
		}
	}
	out := make([]int, 0, min(total, n))
	for j, dj := range dist {
		if int(dj) < cut {
			out = append(out, j)
		}
	}
	for j, dj := range dist { // the ties at the cut, oldest first, to fill r
		if len(out) >= r || cut > encoder.Dim { // past Dim: the scopes hold fewer than r; the rest are not theirs
			break
		}
		if int(dj) == cut {
			out = append(out, j)
		}
	}
	return out
}

// Warm loads the vectors of kinds (sqlstore.VectorEntry,
// VectorEpisode) in streams (nil: every stream) of s into the cache now,
// whatever their number: a one-shot command makes one query, which a
// background load would not be done in time for. It costs what a
// background load does (about 0.6 s of CPU per 100k vectors on this
// machine); a server leaves it to the first queries. A query of scopes
// the cache does not hold (some other stream, or every one) loads the
// kind again whole.
func (d *Dense) Warm(ctx context.Context, s *sqlstore.Store, kinds, streams []string) error {
	c := d.cache(s)
	st, err := s.VectorState(ctx)
	if err != nil {
		return err
	}
	if streams != nil {
		// Sorted, and still non-nil when empty (an empty list is no
		// stream, not every one; slices.Sorted of nothing is nil).
		streams = slices.Clone(streams)
		slices.Sort(streams)
	}
	for _, kind := range kinds {
		i, gen := 0, st.EntryGen
		if kind == sqlstore.VectorEpisode {
			i, gen = 1, st.EpisodeGen
		}
		hint, err := s.CountVectors(ctx, kind, streams)
		if err != nil {
			return err
		}
		rows, err := readVectors(ctx, s, kind, 0, streams, hint)
		if err != nil {
			return err
		}
		c.mu.Lock()
		if c.epoch != st.Epoch {
			c.epoch, c.kinds = st.Epoch, [2]*kindIndex{}
		}
		c.install(i, &kindIndex{gen: gen, streams: streams}, rows, st.Max)
		c.mu.Unlock()
	}
	return nil
}
