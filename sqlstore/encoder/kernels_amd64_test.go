//go:build amd64 && !purego

package encoder

type kernelVariant struct {
	name string
	use  func() (restore func())
}

// kernelVariants are the paths matmul can take on this machine.
func kernelVariants() []kernelVariant {
	set := func(avx2, avx512 bool) func() func() {
		return func() func() {
			a, b := hasAVX2FMA, hasAVX512
			hasAVX2FMA, hasAVX512 = avx2, avx512
			return func() { hasAVX2FMA, hasAVX512 = a, b }
		}
	}
	vs := []kernelVariant{{"Go", set(false, false)}}
	if hasAVX2FMA {
		vs = append(vs, kernelVariant{"AVX2", set(true, false)})
	}
	if hasAVX512 {
		vs = append(vs, kernelVariant{"AVX512", set(true, true)})
	}
	return vs
}
