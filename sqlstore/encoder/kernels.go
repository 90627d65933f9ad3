package encoder

// matmul writes out[r] = b + in[r]·W for rows r < n, W row-major [k][m].
// Four rows share each pass over a row of W, so W streams from memory
// once per four inputs.
func matmul(out, in []float32, n, k, m int, w, b []float32) {
	out = out[:n*m]
	in = in[:n*k]
	w = w[:k*m]
	for r := 0; r < n; r++ {
		copy(out[r*m:(r+1)*m], b[:m])
	}
	if matmulSIMD(out, in, n, k, m, w) {
		return
	}
	r := 0
	for ; r+4 <= n; r += 4 {
		o0, o1, o2, o3 := out[r*m:(r+1)*m], out[(r+1)*m:(r+2)*m], out[(r+2)*m:(r+3)*m], out[(r+3)*m:(r+4)*m]
		i0, i1, i2, i3 := in[r*k:(r+1)*k], in[(r+1)*k:(r+2)*k], in[(r+2)*k:(r+3)*k], in[(r+3)*k:(r+4)*k]
		for i := 0; i < k; i++ {
			axpy4(o0, o1, o2, o3, w[i*m:(i+1)*m], i0[i], i1[i], i2[i], i3[i])
		}
	}
	for ; r < n; r++ {
		o := out[r*m : (r+1)*m]
		x := in[r*k : (r+1)*k]
		for i := 0; i < k; i++ {
			axpy(o, w[i*m:(i+1)*m], x[i])
		}
	}
}

func axpyGeneric(o, w []float32, a float32) {
	w = w[:len(o)]
	for j, y := range w {
		o[j] += a * y
	}
}

func axpy4Generic(o0, o1, o2, o3, w []float32, a0, a1, a2, a3 float32) {
	m := len(w)
	o0, o1, o2, o3 = o0[:m], o1[:m], o2[:m], o3[:m]
	for j, y := range w {
		o0[j] += a0 * y
		o1[j] += a1 * y
		o2[j] += a2 * y
		o3[j] += a3 * y
	}
}
