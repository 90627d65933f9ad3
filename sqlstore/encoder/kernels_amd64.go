//go:build amd64 && !purego

package encoder

// The matrix products are the whole cost of a forward pass (≈ 4.6M
// multiply-adds a piece). On amd64 with AVX2 and FMA they run in
// kernels_amd64.s: 4 rows × 16 columns of the output held in registers
// across the whole inner dimension, so each row of W is read once per
// four input rows. Elsewhere, or with -tags purego, the Go loops of
// kernels.go run; both orders of summation agree with the reference
// within the golden test's tolerance.

//go:noescape
func gemm4x16(out *float32, ldo int, in *float32, ldi int, w *float32, ldw int, k int)

//go:noescape
func gemm1x16(out *float32, in *float32, w *float32, ldw int, k int)

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

var (
	axpy  = axpyGeneric
	axpy4 = axpy4Generic
)

// matmulSIMD is matmul's fast path; it reports false when it cannot run.
func matmulSIMD(out, in []float32, n, k, m int, w []float32) bool {
	if !hasAVX2FMA || m%16 != 0 || k == 0 || n == 0 {
		return false
	}
	for j := 0; j < m; j += 16 { // a 16-column panel of W stays in cache across the rows
		r := 0
		for ; r+4 <= n; r += 4 {
			gemm4x16(&out[r*m+j], m, &in[r*k], k, &w[j], m, k)
		}
		for ; r < n; r++ {
			gemm1x16(&out[r*m+j], &in[r*k], &w[j], m, k)
		}
	}
	return true
}
