//go:build !amd64 || purego

package encoder

func matmulSIMD(out, in []float32, n, k, m int, w []float32) bool { return false }

// Dot is Σ a[i]·b[i] (the cosine of two unit vectors); len(b) ≥ len(a).
func Dot(a, b []float32) float32 { return dot(a, b) }
