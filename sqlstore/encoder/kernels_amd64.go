//go:build amd64 && !purego

package encoder

// The matrix products are the whole cost of a forward pass (≈ 4.6M
// multiply-adds a piece). On amd64 with AVX2 and FMA they run in
// kernels_amd64.s: 8 or 4 rows × 32 columns (AVX-512; with AVX2 two
// passes of 4 × 16) of the output held in registers across the whole inner
// dimension, so each panel of W is read once per four input rows. Elsewhere, or with -tags purego, the Go loops of
// kernels.go run; both orders of summation agree with the reference
// within the golden test's tolerance.

//go:noescape
func gemm4x16(out *float32, ldo int, in *float32, ldi int, w *float32, ldw int, k int)

//go:noescape
func gemm8x32(out *float32, ldo int, in *float32, ldi int, w *float32, ldw int, k int)

//go:noescape
func gemm4x32(out *float32, ldo int, in *float32, ldi int, w *float32, ldw int, k int)

//go:noescape
func gemm1x16(out *float32, in *float32, w *float32, ldw int, k int)

//go:noescape
func dotAVX2(a, b *float32, n int) float32

// Dot is Σ a[i]·b[i] (the cosine of two unit vectors); len(b) ≥ len(a).
func Dot(a, b []float32) float32 {
	if hasAVX2FMA && len(a) >= 32 && len(a)%32 == 0 {
		_ = b[len(a)-1]
		return dotAVX2(&a[0], &b[0], len(a))
	}
	return dot(a, b)
}

func cpuidex(leaf, sub uint32) (a, b, c, d uint32)
func xgetbv0() uint32

var hasAVX2FMA = func() bool {
	maxLeaf, _, _, _ := cpuidex(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, c1, _ := cpuidex(1, 0)
	const fma, osxsave, avx = 1 << 12, 1 << 27, 1 << 28
	if c1&fma == 0 || c1&osxsave == 0 || c1&avx == 0 {
		return false
	}
	if xgetbv0()&6 != 6 { // the OS saves XMM and YMM state
		return false
	}
	_, b7, _, _ := cpuidex(7, 0)
	return b7&(1<<5) != 0 // AVX2
}()

// hasAVX512 adds AVX-512F with the OS saving opmask and ZMM state.
var hasAVX512 = func() bool {
	if !hasAVX2FMA {
		return false
	}
	_, b7, _, _ := cpuidex(7, 0)
	return b7&(1<<16) != 0 && xgetbv0()&0xe6 == 0xe6
}()

// matmulSIMD is matmul's fast path; it reports false when it cannot run.
func matmulSIMD(out, in []float32, n, k, m int, w []float32) bool {
	if !hasAVX2FMA || m%panelW != 0 || k == 0 || n == 0 {
		return false
	}
	for p := 0; p < m; p += panelW { // a panel stays in cache across the rows
		panel := &w[p*k]
		half := &w[p*k+16]
		r := 0
		if hasAVX512 {
			for ; r+8 <= n; r += 8 {
				gemm8x32(&out[r*m+p], m, &in[r*k], k, panel, panelW, k)
			}
		}
		for ; r+4 <= n; r += 4 {
			if hasAVX512 {
				gemm4x32(&out[r*m+p], m, &in[r*k], k, panel, panelW, k)
			} else {
				gemm4x16(&out[r*m+p], m, &in[r*k], k, panel, panelW, k)
				gemm4x16(&out[r*m+p+16], m, &in[r*k], k, half, panelW, k)
			}
		}
		for ; r < n; r++ {
			gemm1x16(&out[r*m+p], &in[r*k], panel, panelW, k)
			gemm1x16(&out[r*m+p+16], &in[r*k], half, panelW, k)
		}
	}
	return true
}
