package encoder

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func randSlice(n int, r *rand.Rand) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = r.Float32()*2 - 1
	}
	return s
}

// TestMatmulKernels: the fast path agrees with the Go loops on every
// shape the model uses, and on row counts that are not a multiple of 4.
func TestMatmulKernels(t *testing.T) {
	for _, v := range kernelVariants() {
		t.Run(v.name, func(t *testing.T) {
			defer v.use()()
			testMatmul(t)
		})
	}
}

func testMatmul(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, sh := range [][3]int{{1, 512, 512}, {3, 256, 768}, {7, 512, 1536}, {13, 1536, 512}, {32, 256, 512}, {12, 512, 512}} {
		n, k, m := sh[0], sh[1], sh[2]
		in, w, b := randSlice(n*k, r), randSlice(k*m, r), randSlice(m, r)
		got, want := make([]float32, n*m), make([]float32, n*m)
		for row := 0; row < n; row++ {
			copy(want[row*m:], b)
			for i := 0; i < k; i++ {
				for j := 0; j < m; j++ {
					want[row*m+j] += in[row*k+i] * w[i*m+j]
				}
			}
		}
		packPanels(w, make([]float32, k*m), k, m)
		matmul(got, in, n, k, m, w, b)
		for i := range got {
			d := got[i] - want[i]
			require.False(t, d > 1e-3, "%v: out[%d] got %v, want %v", sh, i, got[i], want[i])
			require.False(t, d < -1e-3, "%v: out[%d] got %v, want %v", sh, i, got[i], want[i])
		}
	}
}

func BenchmarkMatmul(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	n, k, m := 32, 512, 1536
	in, w, bias := randSlice(n*k, r), randSlice(k*m, r), randSlice(m, r)
	out := make([]float32, n*m)
	packPanels(w, make([]float32, k*m), k, m)
	for b.Loop() {
		matmul(out, in, n, k, m, w, bias)
	}
	b.ReportMetric(float64(2*n*k*m)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func TestDot(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 3, 32, 64, 512, 513} {
		a, b := randSlice(n, r), randSlice(n, r)
		var want float64
		for i := range a {
			want += float64(a[i]) * float64(b[i])
		}
		got := Dot(a, b)
		assert.False(t, float64(got)-want > 1e-4 || want-float64(got) > 1e-4, "n=%d: got %v, want %v", n, got, want)
	}
}
