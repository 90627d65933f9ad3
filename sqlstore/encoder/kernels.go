package encoder

// Matrices are stored in panels of panelW columns: panel p holds columns
// [p·panelW, (p+1)·panelW) of every row, contiguously (k rows of panelW).
// A product then streams each panel sequentially, which the hardware
// prefetcher follows; row-major, each row of a panel sits on another page
// and every cache line is a miss to memory (2× slower end to end).
const panelW = 32 // part of the kernels' contract: gemm4x32, or two gemm4x16

// packPanels rearranges w ([k][m] row-major, m a multiple of panelW) into
// panels, in place, through one scratch buffer of len(w).
func packPanels(w, scratch []float32, k, m int) {
	s := scratch[:k*m]
	copy(s, w)
	o := 0
	for p := 0; p < m; p += panelW {
		for i := 0; i < k; i++ {
			copy(w[o:o+panelW], s[i*m+p:i*m+p+panelW])
			o += panelW
		}
	}
}

// matmul writes out[r] = b + in[r]·W for rows r < n, W in panels
// ([k][m], see packPanels). Rows are taken four at a time; when the
// buffers have room, n is rounded up to a multiple of 4 and the extra
// rows (scratch) are computed too rather than one by one.
func matmul(out, in []float32, n, k, m int, w, b []float32) {
	if n4 := (n + 3) &^ 3; n4 != n && cap(out) >= n4*m && cap(in) >= n4*k {
		n = n4
	}
	out = out[:n*m]
	in = in[:n*k]
	w = w[:k*m]
	for r := 0; r < n; r++ {
		copy(out[r*m:(r+1)*m], b[:m])
	}
	if matmulSIMD(out, in, n, k, m, w) {
		return
	}
	for p := 0; p < m; p += panelW {
		panel := w[p*k : (p+panelW)*k]
		for r := 0; r < n; r++ {
			o := out[r*m+p : r*m+p+panelW]
			x := in[r*k : (r+1)*k]
			for i, a := range x {
				wr := panel[i*panelW : (i+1)*panelW]
				for c := range o {
					o[c] += a * wr[c]
				}
			}
		}
	}
}
