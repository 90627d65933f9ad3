package vectors

import (
	"encoding/binary"
	"math"

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
func signBits(dst []uint64, v []float32) []uint64 {
	for w := 0; w < words; w++ {
		var b uint64
		for i, x := range v[w*64 : w*64+64] {
			if x > 0 {
				b |= 1 << i
			}
		}
		dst = append(dst, b)
	}
	return dst
}

// codeBits is signBits of an int8 code read back as bytes (a byte of 1
// to 127 is a positive code). It takes eight bytes at a time, without a
// branch: a load of every vector of an index runs it once a vector.
func codeBits(dst []uint64, code []byte) []uint64 {
	const lo7, hi = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	for w := 0; w < words; w++ {
		var b uint64
		for k := range 8 {
			x := binary.LittleEndian.Uint64(code[w*64+k*8:])
			// The high bit of each byte: set when its low seven bits
			// are not all 0 (they carry into it) and it was not set
			// (not negative).
			pos := (x&lo7 + lo7) &^ x & hi
			// Gather the eight high bits into one byte, byte i to bit
			// i (the products do not overlap, so nothing carries).
			b |= ((pos >> 7) * 0x0102040810204080 >> 56) << (k * 8)
		}
		dst = append(dst, b)
	}
	return dst
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
