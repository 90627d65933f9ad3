package vectors

import "dshmem/sqlstore/encoder"

// SignScan ranks vs by the sign scan with r re-ranked by their int8
// cosine, as Nearest does over an index, and returns the k best
// positions.
func SignScan(q []float32, vs [][]float32, r, k int) []int {
	ki := &kindIndex{}
	codes := make([][]byte, len(vs))
	scales := make([]float32, len(vs))
	for i, v := range vs {
		s, c := Quantize(v)
		b := make([]byte, len(c))
		for j, x := range c {
			b[j] = byte(x)
		}
		codes[i], scales[i] = b, s
		ki.ns = append(ki.ns, int64(i))
		ki.ids = append(ki.ids, int64(i))
		ki.scope = append(ki.scope, 0)
		ki.bits = codeBits(ki.bits, b)
	}
	var qb [words]uint64
	signBits(qb[:0], q)
	cand := ki.scan(qb[:], nil, r)
	type hit struct {
		i int
		c float32
	}
	hs := make([]hit, 0, len(cand))
	for _, j := range cand {
		hs = append(hs, hit{j, cosine(q, scales[j], codes[j])})
	}
	for i := 1; i < len(hs); i++ {
		for j := i; j > 0 && hs[j].c > hs[j-1].c; j-- {
			hs[j], hs[j-1] = hs[j-1], hs[j]
		}
	}
	out := []int{}
	for _, h := range hs[:min(k, len(hs))] {
		out = append(out, h.i)
	}
	return out
}

// Cosine is the int8 cosine of q with v quantised.
func Cosine(q, v []float32) float32 {
	s, c := Quantize(v)
	b := make([]byte, len(c))
	for j, x := range c {
		b[j] = byte(x)
	}
	return cosine(q, s, b)
}

// Words is the uint64s of a vector's sign bits.
const Words = words

var _ = encoder.Dim

// Loaded is how many vectors of kind d holds of s.
func (d *Dense) Loaded(s interface{ Path() string }, kind string) int {
	d.mu.Lock()
	c := d.caches[s.Path()]
	d.mu.Unlock()
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	i := 0
	if kind == "episode" {
		i = 1
	}
	if c.kinds[i] == nil {
		return 0
	}
	return len(c.kinds[i].ns)
}

// CodeBits is codeBits of one code.
func CodeBits(code []byte) []uint64 { return codeBits(nil, code) }

// SignBits is signBits of one vector.
func SignBits(v []float32) []uint64 { return signBits(nil, v) }
