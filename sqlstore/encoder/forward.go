package encoder

import "math"

// Encoder runs the forward pass with buffers sized once for MaxPieces, so
// an Encode allocates nothing (beyond dst when it is too small). An
// Encoder is not safe for concurrent use: give each goroutine its own.
type Encoder struct {
	m   *Model
	tok tokScratch
	x   []float32 // [n][hidden] the residual stream
	a   []float32 // [n][hidden] layer-normed input of a block
	r   []float32 // [n][hidden] residual of layer 0's attention
	qkv []float32 // [n][3·hidden]
	o   []float32 // [n][hidden] attention output before its projection
	f   []float32 // [n][ffnDim]
	p   []float32 // [n] attention weights of one query
	v   []float32 // [hidden] pooled
}

// NewEncoder returns an Encoder over m.
func (m *Model) NewEncoder() *Encoder {
	n := MaxPieces
	return &Encoder{m: m,
		x: make([]float32, n*hidden), a: make([]float32, n*hidden), r: make([]float32, n*hidden),
		qkv: make([]float32, n*3*hidden), o: make([]float32, n*hidden), f: make([]float32, n*ffnDim),
		p: make([]float32, n), v: make([]float32, hidden)}
}

// Pieces returns the piece ids Encode would use for text (after the cut
// to MaxPieces), valid until the next call on e.
func (e *Encoder) Pieces(text string) []int32 {
	ids := e.m.Tok.encode(&e.tok, text)
	if len(ids) > MaxPieces {
		ids = ids[:MaxPieces]
	}
	return ids
}

// Encode appends the unit-length Dim-vector of text to dst[:0] and
// returns it. Any text has a vector (the empty text too).
func (e *Encoder) Encode(dst []float32, text string) []float32 {
	ids := e.Pieces(text)
	return e.forward(dst, ids)
}

func (e *Encoder) forward(dst []float32, ids []int32) []float32 {
	m := e.m
	n := len(ids)
	// Layer 0's input, as the graph builds it: the scattered embedding plus
	// a scatter of (embedding + timing signal) — 2·emb + signal, summed in
	// that order.
	x := e.x[:n*embedDim]
	half := embedDim / 2
	for t, id := range ids {
		emb := m.embed[int(id)*embedDim : (int(id)+1)*embedDim]
		row := x[t*embedDim : (t+1)*embedDim]
		for j := 0; j < half; j++ {
			arg := float32(t) * m.timing[j]
			s, c := math.Sincos(float64(arg))
			row[j] = emb[j] + (emb[j] + float32(s))
			row[half+j] = emb[half+j] + (emb[half+j] + float32(c))
		}
	}
	for i := range m.layers {
		e.layer(&m.layers[i], n)
	}
	// Mean over the pieces, the tanh layer, L2 normalisation.
	v := e.v
	clear(v)
	for t := 0; t < n; t++ {
		row := e.x[t*hidden : (t+1)*hidden]
		for j := range v {
			v[j] += row[j]
		}
	}
	div := float32(max(n, 1))
	for j := range v {
		v[j] /= div
	}
	if cap(dst) < Dim {
		dst = make([]float32, Dim)
	}
	dst = dst[:Dim]
	matmul(dst, v, 1, hidden, Dim, m.wt, m.bt)
	var ss float32
	for j, y := range dst {
		y = float32(math.Tanh(float64(y)))
		dst[j] = y
		ss += y * y
	}
	inv := float32(1 / math.Sqrt(float64(max(ss, l2Epsilon))))
	for j := range dst {
		dst[j] *= inv
	}
	return dst
}

// layer runs one pre-norm transformer layer on e.x ([n][L.in]), leaving
// [n][hidden] in e.x.
func (e *Encoder) layer(L *layer, n int) {
	in := L.in
	x := e.x[:n*in]
	a := e.a[:n*in]
	layerNorm(a, x, n, in, L.lnAScale, L.lnABias)
	var res []float32
	if L.wres != nil {
		res = e.r[:n*hidden]
		matmul(res, x, n, in, hidden, L.wres, L.bres)
	} else {
		res = x // in == hidden: the identity residual
	}
	qkv := e.qkv[:n*3*in]
	matmul(qkv, a, n, in, 3*in, L.wqkv, L.bqkv)
	e.attention(qkv, n, in, L.qScale)
	// x = o·Wo + bo + res. When res is x itself, project into a first.
	out := e.a[:n*hidden]
	matmul(out, e.o[:n*in], n, in, hidden, L.wo, L.bo)
	x = e.x[:n*hidden]
	for i := range x {
		x[i] = out[i] + res[i]
	}
	// FFN: x += relu(LN(x)·W1 + b1)·W2 + b2.
	a = e.a[:n*hidden]
	layerNorm(a, x, n, hidden, L.lnFScale, L.lnFBias)
	f := e.f[:n*ffnDim]
	matmul(f, a, n, hidden, ffnDim, L.w1, L.b1)
	for i, y := range f {
		if y < 0 {
			f[i] = 0
		}
	}
	g := e.r[:n*hidden]
	matmul(g, f, n, ffnDim, hidden, L.w2, L.b2)
	for i := range x {
		x[i] = g[i] + x[i]
	}
}

// attention computes softmax(q·kᵀ)·v per head from qkv ([n][q|k|v], each
// in wide, heads of in/heads) into e.o ([n][in]). No position is padding
// for a single text, so there is no mask. q is scaled first, as the
// graph does.
func (e *Encoder) attention(qkv []float32, n, in int, qScale float32) {
	d := in / heads
	stride := 3 * in
	o := e.o[:n*in]
	p := e.p[:n]
	q := e.v[:d] // e.v is free until pooling
	for h := 0; h < heads; h++ {
		for i := 0; i < n; i++ {
			for c, y := range qkv[i*stride+h*d : i*stride+h*d+d] {
				q[c] = y * qScale
			}
			mx := float32(math.Inf(-1))
			for j := 0; j < n; j++ {
				s := dot(q, qkv[j*stride+in+h*d:j*stride+in+h*d+d])
				p[j] = s
				mx = max(mx, s)
			}
			var sum float32
			for j := range p {
				y := float32(math.Exp(float64(p[j] - mx)))
				p[j] = y
				sum += y
			}
			oi := o[i*in+h*d : i*in+h*d+d]
			clear(oi)
			for j := 0; j < n; j++ {
				axpy(oi, qkv[j*stride+2*in+h*d:j*stride+2*in+h*d+d], p[j]/sum)
			}
		}
	}
}

// dot is Σ a[i]·b[i] over len(a), in four partial sums.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// axpy adds a·x to o (len(o) a multiple of 4).
func axpy(o, x []float32, a float32) {
	x = x[:len(o)]
	for i := 0; i+4 <= len(o); i += 4 {
		o[i] += a * x[i]
		o[i+1] += a * x[i+1]
		o[i+2] += a * x[i+2]
		o[i+3] += a * x[i+3]
	}
}

// layerNorm writes scale·(x−mean)/sqrt(var+ε) + bias per row, in the
// graph's order: (scale·rsqrt)·(x−mean) + bias.
func layerNorm(dst, x []float32, n, w int, scale, bias []float32) {
	for t := 0; t < n; t++ {
		row := x[t*w : (t+1)*w]
		out := dst[t*w : (t+1)*w]
		var mean float32
		for _, y := range row {
			mean += y
		}
		mean /= float32(w)
		var v float32
		for _, y := range row {
			d := y - mean
			v += d * d
		}
		v /= float32(w)
		rs := float32(1 / math.Sqrt(float64(v+lnEpsilon)))
		for j, y := range row {
			out[j] = (scale[j]*rs)*(y-mean) + bias[j]
		}
	}
}

// EncodeTail is Encode for texts whose end matters most (a dialogue,
// newest line last): past MaxPieces it keeps the last pieces rather than
// the first.
func (e *Encoder) EncodeTail(dst []float32, text string) []float32 {
	ids := e.m.Tok.encode(&e.tok, text)
	if len(ids) > MaxPieces {
		ids = ids[len(ids)-MaxPieces:]
	}
	return e.forward(dst, ids)
}
