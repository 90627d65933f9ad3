//go:build !amd64 || purego

package encoder

func matmulSIMD(out, in []float32, n, k, m int, w []float32) bool { return false }
