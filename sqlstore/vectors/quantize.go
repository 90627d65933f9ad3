package vectors

import (
	"math"
	"math/bits"

	"dshmem/sqlstore/encoder"
)

// words is the uint64s of one vector's sign bits.
const words = encoder.Dim / 64

// Quantize returns v as int8 codes and their scale (see doc.go). Part of
// the index format: the same v always gives the same bytes.
func Quantize(v []float32) (scale float32, code []int8) {
	var mx float32
	for _, x := range v {
		mx = max(mx, float32(math.Abs(float64(x))))
	}
	code = make([]int8, len(v))
	if mx == 0 {
		return 0, code
	}
	scale = mx / 127
	for i, x := range v {
		code[i] = int8(math.Round(float64(x / scale)))
	}
	return scale, code
}

// signBits appends the sign bits of the vector (bit i of word i/64 set
// when component i is positive) to dst.
func signBits[T int8 | float32 | byte](dst []uint64, v []T) []uint64 {
	for w := 0; w < words; w++ {
		var b uint64
		for i := 0; i < 64; i++ {
			x := v[w*64+i]
			if pos(x) {
				b |= 1 << i
			}
		}
		dst = append(dst, b)
	}
	return dst
}

func pos[T int8 | float32 | byte](x T) bool {
	switch y := any(x).(type) {
	case byte: // an int8 code read back as a byte
		return y != 0 && y < 128
	case int8:
		return y > 0
	case float32:
		return y > 0
	}
	return false
}

// hamming is the count of differing bits of two vectors' signs.
func hamming(a, b []uint64) int {
	_ = a[words-1]
	_ = b[words-1]
	return bits.OnesCount64(a[0]^b[0]) + bits.OnesCount64(a[1]^b[1]) + bits.OnesCount64(a[2]^b[2]) +
		bits.OnesCount64(a[3]^b[3]) + bits.OnesCount64(a[4]^b[4]) + bits.OnesCount64(a[5]^b[5]) +
		bits.OnesCount64(a[6]^b[6]) + bits.OnesCount64(a[7]^b[7])
}

// cosine is scale·Σ q[i]·code[i], code read as int8 from bytes.
func cosine(q []float32, scale float32, code []byte) float32 {
	code = code[:len(q)]
	var s0, s1, s2, s3 float32
	for i := 0; i+4 <= len(q); i += 4 {
		s0 += q[i] * float32(int8(code[i]))
		s1 += q[i+1] * float32(int8(code[i+1]))
		s2 += q[i+2] * float32(int8(code[i+2]))
		s3 += q[i+3] * float32(int8(code[i+3]))
	}
	return scale * ((s0 + s1) + (s2 + s3))
}
